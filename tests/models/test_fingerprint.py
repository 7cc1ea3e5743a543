"""Input fingerprints: the fields they hold, a pixel hash taken once per tensor and
version, and the first difference said in words."""

from __future__ import annotations

from dataclasses import replace

import torch

from videorl.models.fingerprint import (
    _PIXEL_SHA1,
    fingerprint,
    first_difference,
    tensor_sha1,
)
from videorl.models.inputs import PromptEncoding
from videorl.video.decode import DecodedVideo
from videorl.video.meta import VideoMeta


def _prompt(ids=(1, 2, 3, 4), pixels=None, grid=((2, 4, 4),)) -> PromptEncoding:
    pixels = torch.arange(32 * 6, dtype=torch.float32).reshape(32, 6) if pixels is None else pixels
    return PromptEncoding(
        input_ids=torch.tensor(ids),
        vision={
            "pixel_values_videos": pixels,
            "video_grid_thw": torch.tensor(grid),
            "second_per_grid_ts": torch.tensor([1.0]),
        },
    )


def _video(timestamps=(0.0, 0.5)) -> DecodedVideo:
    meta = VideoMeta(
        source_fps=2.0,
        duration=1.0,
        frame_indices=tuple(range(len(timestamps))),
        timestamps=timestamps,
        fps=2.0,
    )
    return DecodedVideo(torch.zeros(len(timestamps), 3, 4, 4, dtype=torch.uint8), meta)


def test_equal_inputs_give_one_digest_and_any_field_changes_it():
    base = fingerprint(_prompt(), [_video()])
    assert base == fingerprint(_prompt(), [_video()])  # other objects, the same values
    assert len(base.digest) == 16 and base.digest == fingerprint(_prompt(), [_video()]).digest
    assert base.grids == (("video_grid_thw", ((2, 4, 4),)),)
    assert base.timestamps == ((0.0, 0.5),) and base.second_per_grid == (1.0,)
    others = [
        fingerprint(_prompt(ids=(1, 2, 9, 4)), [_video()]),
        fingerprint(_prompt(grid=((2, 2, 8),)), [_video()]),
        fingerprint(_prompt(), [_video((0.0, 0.6))]),
        fingerprint(_prompt(pixels=torch.ones(32, 6)), [_video()]),
    ]
    assert len({base.digest, *(o.digest for o in others)}) == 5


def test_the_first_difference_is_named():
    base = fingerprint(_prompt(), [_video()])
    assert first_difference(base, base) is None
    cases = {
        (1, 2, 9, 4): "prompt token 2 is 3 at rollout, 9 here",
        (1, 2, 3, 4, 5, 6): "the prompt has 4 tokens at rollout, 6 here",
    }
    for ids, words in cases.items():
        assert first_difference(base, fingerprint(_prompt(ids=ids), [_video()])) == words
    moved = fingerprint(_prompt(), [_video((0.0, 0.75))])
    assert (
        first_difference(base, moved)
        == "frame 1 of media item 0 is at 0.5 s at rollout, 0.75 s here"
    )
    fewer = fingerprint(_prompt(), [_video((0.0,))])
    assert first_difference(base, fewer) == "media item 0 has 2 frames at rollout, 1 here"
    grid = first_difference(base, fingerprint(_prompt(grid=((2, 2, 8),)), [_video()]))
    assert grid is not None and grid.startswith("grid_thw {'video_grid_thw': ((2, 4, 4),)}")
    pixels = first_difference(base, fingerprint(_prompt(pixels=torch.ones(32, 6)), [_video()]))
    assert pixels is not None and pixels.startswith("the pixel tensors differ (SHA-1 ")


def test_a_pixel_tensor_is_hashed_once_until_written_in_place(monkeypatch):
    import hashlib

    from videorl.models import fingerprint as module

    pixels = torch.rand(16, 6)
    calls = []
    real = hashlib.sha1

    def counting(*args):
        calls.append(1)
        return real(*args)

    first = tensor_sha1(pixels)
    monkeypatch.setattr(module.hashlib, "sha1", counting)
    assert tensor_sha1(pixels) == first and not calls  # remembered
    prompt = _prompt(pixels=pixels)
    fingerprint(prompt)
    assert len(calls) == 1  # the fingerprint's own SHA-1 over the remembered one only
    pixels.mul_(2)  # an in-place write bumps the version: hashed again, and differs
    assert tensor_sha1(pixels) != first and len(calls) == 2
    same_bytes = pixels.clone()
    assert tensor_sha1(same_bytes) == tensor_sha1(pixels)  # a copy hashes the same
    key = id(same_bytes)
    del same_bytes
    assert key not in _PIXEL_SHA1  # dropped with its tensor


def test_text_prompts_and_image_prompts():
    text = fingerprint(PromptEncoding(input_ids=torch.tensor([5, 6])))
    assert text.grids == () and text.timestamps == () and text.token_ids == (5, 6)
    image = replace(
        _prompt(),
        vision={"pixel_values": torch.ones(4, 6), "image_grid_thw": torch.tensor([[1, 2, 2]])},
    )
    still = fingerprint(image, [_video((0.0,))])
    assert still.grids == (("image_grid_thw", ((1, 2, 2),)),) and still.pixels != text.pixels
