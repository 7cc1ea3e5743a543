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

Tools that re-read the video (a clip of any window, a frame at any time) must see the whole
video under the control, not a control of their own output: a `reversed` clip of one second
would otherwise show that second's real content, only backwards. `ControlledTimeline` maps
each source frame `i` of the video's frames `first .. last` (`n` of them; the prompt sampled
`T`) to the frame the controlled video shows there:

- `frozen`: the prompt's first frame (as the prompt's frozen frames);
- `reversed`: `first + last - i`, the video played backwards;
- `shuffled`: the video cut into `T` equal segments, each moved to where the prompt's
  permutation `perm` (seeded as the prompt's, `media_key`) moves its frame:
  `i -> i + (perm[k] - k) n / T` for `i` in segment `k`; the order within a segment stays.

Frozen matches the prompt's frames exactly; the other two match them up to the prompt's
sampling step (its frames need not sit at the segments' or the span's symmetric points).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
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


def media_key(media: MediaRef) -> str:
    """What seeds `shuffled` for a record's media: its path and clip."""
    return f"{media.path}:{media.start}:{media.end}"


class ControlledVideos:
    """A video cache's view whose `get(media)` is the decoded media under one control (the
    decodes are the cache's; `shuffled` is seeded by `media_key`)."""

    def __init__(self, videos: MediaSource, control: str) -> None:
        self.videos, self.control = videos, control

    def get(self, media: MediaRef) -> DecodedVideo:
        return apply_control(self.videos.get(media), self.control, media_key(media))


@dataclass(frozen=True)
class ControlledTimeline:
    """Which source frame a temporal control shows at each source frame `first .. first + n
    - 1` of a video (module docstring); `held` is the frozen frame and `order` the `shuffled`
    permutation of `len(order)` segments."""

    control: str
    first: int
    n: int
    held: int
    order: tuple[int, ...] = ()

    @classmethod
    def of(cls, control: str, prompt: DecodedVideo, key: str) -> ControlledTimeline:
        """The timeline of `control` for a video whose prompt frames are `prompt` (shuffled
        with the permutation `apply_control(prompt, "shuffled", key)` uses)."""
        if control not in TEMPORAL:
            raise ValueError(f"{control!r} is not a temporal control ({', '.join(TEMPORAL)})")
        meta = prompt.meta
        first = round(meta.clip_start * meta.source_fps)
        n = max(1, round(meta.duration * meta.source_fps))
        sampled = len(meta.frame_indices)
        order = permutation(sampled, key).tolist() if control == "shuffled" else []
        return cls(control, first, n, meta.frame_indices[0], tuple(order))

    def source(self, index: int) -> int:
        """The source frame shown at source frame `index`, within the video's frames."""
        last = self.first + self.n - 1
        index = min(max(index, self.first), last)
        if self.control == "frozen":
            return self.held
        if self.control == "reversed":
            return self.first + last - index
        segments = len(self.order)
        k = min(segments - 1, (index - self.first) * segments // self.n)
        moved = index + round((self.order[k] - k) * self.n / segments)
        return min(max(moved, self.first), last)
