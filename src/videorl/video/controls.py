"""Video controls: the same decoded media with its visual evidence removed or scrambled.

A model that uses the video scores lower on a control than on the real media; a model that
answers from the prompt alone scores the same. The *video gain* of a metric is

    gain(metric, control) = metric(real media) - metric(control media)

Controls are made in memory from the decoded frames (`T x C x H x W` uint8), keeping the
frame count, size and metadata (duration, timestamps), so the prompt, the number of
visual tokens and the time encoding are those of the real media:

- `frozen`: every frame is the first frame (the content is there, its change is not);
- `reversed`: the frames in reverse order (what happens, backwards in time);
- `shuffled`: a seeded permutation of the frames, never the identity when T > 1;
- `blank`: every frame one constant grey (no content at all).

A still image (T = 1) has no time: only `blank` changes it; the temporal controls return
it unchanged, and `applies` says so, so that evaluation leaves images out of a temporal
control's summary instead of counting a trivial zero gain.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import replace
from typing import Literal, get_args

import torch

from videorl.errors import ConfigError
from videorl.video.cache import MediaSource
from videorl.video.decode import DecodedVideo
from videorl.video.media import MediaRef

Control = Literal["frozen", "reversed", "shuffled", "blank"]
CONTROLS: tuple[str, ...] = get_args(Control)
TEMPORAL = frozenset({"frozen", "reversed", "shuffled"})
BLANK_VALUE = 128  # mid grey: no colour, no edge


def check_controls(names: Sequence[str], where: str, hint: str = "") -> tuple[str, ...]:
    """`names` as a tuple when every one is a control; else one line naming the first
    unknown one after `where` (the key or flag it came from)."""
    for name in names:
        if name not in CONTROLS:
            raise ConfigError(
                f"{where} {name!r} is unknown; choose from {', '.join(CONTROLS)}{hint}"
            )
    return tuple(names)


def parse_controls(text: str | None) -> tuple[str, ...]:
    """`"frozen,reversed"` -> ("frozen", "reversed"); empty -> (); unknown names refused."""
    names = tuple(dict.fromkeys(n.strip() for n in (text or "").split(",") if n.strip()))
    return check_controls(names, "control", " (comma-separated)")


def applies(control: str, video: DecodedVideo) -> bool:
    """Whether `control` changes `video` (temporal controls need more than one frame)."""
    return control == "blank" or video.frames.shape[0] > 1


def permutation(num_frames: int, key: str) -> torch.Tensor:
    """A permutation of `num_frames` seeded by `key` (e.g. the record id); a drawn identity
    is rolled by one so that the order always changes."""
    generator = torch.Generator().manual_seed(zlib.crc32(key.encode()))
    order = torch.randperm(num_frames, generator=generator)
    if num_frames > 1 and torch.equal(order, torch.arange(num_frames)):
        order = order.roll(1)
    return order


def apply_control(video: DecodedVideo, control: str, key: str = "") -> DecodedVideo:
    """`video` under `control` (same shape and metadata); `key` seeds `shuffled`."""
    frames = video.frames
    if control == "blank":
        changed = torch.full_like(frames, BLANK_VALUE)
    elif not applies(control, video):
        return video
    elif control == "frozen":
        changed = frames[:1].expand_as(frames).clone()
    elif control == "reversed":
        changed = frames.flip(0)
    elif control == "shuffled":
        changed = frames[permutation(frames.shape[0], key)]
    else:
        raise ConfigError(f"control {control!r} is unknown; choose from {', '.join(CONTROLS)}")
    return replace(video, frames=changed.contiguous())


class ControlledVideos:
    """A video cache's view whose `get(media)` is the decoded media under one control (the
    decodes are the cache's; `shuffled` is seeded by the media's path and clip)."""

    def __init__(self, videos: MediaSource, control: str) -> None:
        self.videos, self.control = videos, control

    def get(self, media: MediaRef) -> DecodedVideo:
        key = f"{media.path}:{media.start}:{media.end}"
        return apply_control(self.videos.get(media), self.control, key)
