"""Input fingerprints: what the model saw, in a form two passes can compare.

A fingerprint of a prompt holds its token ids, the `*_grid_thw` of its videos and images,
Qwen2.5-VL's `second_per_grid_ts`, the timestamps of its media's frames and one SHA-1 of
the bytes of its pixel tensors (`pixel_values_videos`, `pixel_values`). Its `digest` (16
hex characters of SHA-256 over all of them) is what `videorl eval`, `serve` and the demo
report, so one video and question gives one digest in every command
(docs/long_videos.md#input-fingerprints). A pixel tensor's SHA-1 is computed once and
remembered for that tensor object while its version counter (bumped by any in-place write)
is unchanged, so the rollout hashes a prompt's pixels once per step and the later checks of
the same tensors cost a lookup.
"""

from __future__ import annotations

import hashlib
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from videorl.models.inputs import VISION_KEYS, PromptEncoding

if TYPE_CHECKING:
    from videorl.video.decode import DecodedVideo

PIXEL_KEYS = ("pixel_values_videos", "pixel_values")
# id(tensor) -> (a weak reference to it, its version when hashed, the SHA-1)
_PIXEL_SHA1: dict[int, tuple[weakref.ref, int, str]] = {}


def tensor_sha1(tensor: torch.Tensor) -> str:
    """SHA-1 of the tensor's bytes (dtype and shape included), remembered per tensor object
    and version."""
    key = id(tensor)
    seen = _PIXEL_SHA1.get(key)
    if seen is not None and seen[0]() is tensor and seen[1] == tensor._version:
        return seen[2]
    data = tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8)
    sha = hashlib.sha1(f"{tensor.dtype}{tuple(tensor.shape)}".encode())
    sha.update(data.numpy().data)
    ref = weakref.ref(tensor, lambda _: _PIXEL_SHA1.pop(key, None))
    _PIXEL_SHA1[key] = (ref, tensor._version, sha.hexdigest())
    return _PIXEL_SHA1[key][2]


@dataclass(frozen=True)
class InputFingerprint:
    """A prompt as the model took it (see the module docstring)."""

    token_ids: tuple[int, ...]
    grids: tuple[tuple[str, tuple[tuple[int, ...], ...]], ...]  # (key, rows of t, h, w)
    second_per_grid: tuple[float, ...]
    timestamps: tuple[tuple[float, ...], ...]  # per media item, in order
    pixels: str  # SHA-1 of the pixel tensors, in `PIXEL_KEYS` order

    @property
    def digest(self) -> str:
        material = repr(
            (self.token_ids, self.grids, self.second_per_grid, self.timestamps, self.pixels)
        )
        return hashlib.sha256(material.encode()).hexdigest()[:16]


def fingerprint(
    prompt: PromptEncoding, media: Sequence[DecodedVideo | None] = ()
) -> InputFingerprint:
    """The fingerprint of `prompt` with its media (`media`: the decoded videos and images
    whose frames it holds, in order; their timestamps)."""
    vision = prompt.vision
    grids = tuple(
        (key, tuple(tuple(int(v) for v in row) for row in vision[key].tolist()))
        for key in VISION_KEYS
        if key.endswith("grid_thw") and key in vision
    )
    seconds = vision.get("second_per_grid_ts")
    sha = hashlib.sha1()
    for key in PIXEL_KEYS:
        if key in vision:
            sha.update(f"{key}:{tensor_sha1(vision[key])};".encode())
    return InputFingerprint(
        token_ids=tuple(prompt.input_ids.tolist()),
        grids=grids,
        second_per_grid=() if seconds is None else tuple(round(float(s), 6) for s in seconds),
        timestamps=tuple(
            tuple(round(float(t), 6) for t in m.meta.timestamps) for m in media if m is not None
        ),
        pixels=sha.hexdigest(),
    )


def _first_index(a: Sequence[object], b: Sequence[object]) -> int:
    return next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )


def first_difference(expected: InputFingerprint, got: InputFingerprint) -> str | None:
    """The first field in which `got` differs from `expected` (the rollout's), in words;
    None when they agree."""
    if expected.token_ids != got.token_ids:
        a, b = expected.token_ids, got.token_ids
        i = _first_index(a, b)
        if i >= min(len(a), len(b)):
            return f"the prompt has {len(a)} tokens at rollout, {len(b)} here"
        return f"prompt token {i} is {a[i]} at rollout, {b[i]} here"
    if expected.grids != got.grids:
        return f"grid_thw {dict(expected.grids)} at rollout, {dict(got.grids)} here"
    if expected.second_per_grid != got.second_per_grid:
        return (
            f"second_per_grid_ts {list(expected.second_per_grid)} at rollout, "
            f"{list(got.second_per_grid)} here"
        )
    if expected.timestamps != got.timestamps:
        return _timestamp_difference(expected.timestamps, got.timestamps)
    if expected.pixels != got.pixels:
        return (
            f"the pixel tensors differ (SHA-1 {expected.pixels[:12]} at rollout, "
            f"{got.pixels[:12]} here)"
        )
    return None


def _timestamp_difference(
    expected: tuple[tuple[float, ...], ...], got: tuple[tuple[float, ...], ...]
) -> str:
    if len(expected) != len(got):
        return f"{len(expected)} media items at rollout, {len(got)} here"
    item = _first_index(expected, got)
    a, b = expected[item], got[item]
    i = _first_index(a, b)
    if i >= min(len(a), len(b)):
        return f"media item {item} has {len(a)} frames at rollout, {len(b)} here"
    return f"frame {i} of media item {item} is at {a[i]:g} s at rollout, {b[i]:g} s here"
