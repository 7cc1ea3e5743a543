"""When to seek: the keyframe each wanted frame is decoded from (docs/long_videos.md).

Pure arithmetic on a stream's frame index, no I/O. The index lists the stream's frames in
presentation order: `frame_index[p]`, the source frame number of the p-th frame
(`round((pts - start) * time_base * fps)`, non-decreasing), and `keyframes`, the positions
`p` of the frames a decoder can start from. For a wanted source frame `w`:

- its frame is `F(w)`, the first position with `frame_index[p] >= w` (the frame at or past
  `w` stands in for it, as when reading forward: variable frame rate leaves gaps);
- its keyframe is `K(w)`, the last keyframe position `<= F(w)`; decoding from `K(w)` yields
  `F(w)` and every frame after it, so seeking there returns exactly the frame that reading
  forward from the start returns.

Reading forward from position `c` to `F(w)` decodes `F(w) - c + 1` frames; seeking decodes
`F(w) - K(w) + 1`. With `c` the position after the last frame decoded (0 before any), the
plan seeks for `w` when `K(w) - c >= min_skip`, i.e. when a keyframe lies far enough past
what was already decoded that the frames it skips outweigh a seek (a flush and a restart of
the decoder's threads). Dense sampling (wanted frames within one group of pictures) reads
forward; sparse sampling of a long file seeks once per wanted frame whose group of pictures
the previous one did not reach. `always` seeks for every wanted frame (the naive loop),
for comparison.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# Skipped frames below which a seek is not worth its flush: decoding a handful of frames
# costs about what re-starting a frame-threaded decoder does.
MIN_SKIP = 8


@dataclass(frozen=True)
class FrameIndex:
    """A stream's frames in presentation order: their source frame numbers and the positions
    of its keyframes (both sorted), and each frame's pts (what a seek is addressed by)."""

    frame_index: np.ndarray  # int64, non-decreasing
    pts: np.ndarray  # int64, increasing
    keyframes: np.ndarray  # int64 positions into the two arrays, increasing

    @classmethod
    def from_packets(
        cls, pts: Sequence[int], is_key: Sequence[bool], start: int, time_base: float, fps: float
    ) -> FrameIndex:
        """The index from demuxed packets (any order: decode order is sorted by pts here)."""
        stamps = np.asarray(pts, dtype=np.int64)
        keys = np.asarray(is_key, dtype=bool)
        order = np.argsort(stamps, kind="stable")
        stamps, keys = stamps[order], keys[order]
        numbers = np.rint((stamps - start).astype(np.float64) * time_base * fps).astype(np.int64)
        return cls(frame_index=numbers, pts=stamps, keyframes=np.flatnonzero(keys).astype(np.int64))

    def frame_of(self, wanted: int) -> int:
        """`F(w)`: the position of the first frame numbered `>= wanted` (`len` if none)."""
        return int(np.searchsorted(self.frame_index, wanted, side="left"))

    def keyframe_of(self, position: int) -> int:
        """`K`: the last keyframe position `<= position` (0 when the stream opens with none)."""
        at = int(np.searchsorted(self.keyframes, position, side="right")) - 1
        return int(self.keyframes[at]) if at >= 0 else 0


def plan_seeks(
    index: FrameIndex, wanted: Sequence[int], *, always: bool = False, min_skip: int = MIN_SKIP
) -> list[int | None]:
    """For each of the sorted distinct `wanted` frame numbers, the keyframe position to seek
    to before decoding it, or None to keep reading forward (module docstring)."""
    seeks: list[int | None] = []
    after = 0  # position of the next frame the decoder would return
    for w in wanted:
        frame = index.frame_of(w)
        if frame >= len(index.frame_index) or frame < after:
            seeks.append(None)  # past the end (the read reports it) or already decoded
            continue
        key = index.keyframe_of(frame)
        seek = key - after >= min_skip or (always and (key, after) != (0, 0))
        seeks.append(key if seek else None)
        after = frame + 1
    return seeks
