"""Video decoding backends: PyAV (default), torchcodec and decord (optional installs).

Each backend is a function `read(path, plan, convert) -> (SourceInfo, frames)`: it opens the
file, learns its frame count and rate, asks `plan(info)` for the source frame indices, and
returns those frames in the order of the plan, each decoded frame (uint8 `H x W x 3`, RGB)
passed through `convert` as soon as it is decoded (the caller resizes it to the model's
resolution there), stacked into one uint8 tensor `n x C x H' x W'`. A reader never holds more
than the planned frames after `convert` plus the frame in flight (docs/long_videos.md).

The PyAV reader chooses per plan between reading forward and seeking to each wanted frame's
keyframe, from the stream's frame index (`videorl.video.seeking`); both return the same
frames. Errors propagate raw; `decode.py` turns them into a `MediaError` naming the file.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import pairwise
from typing import Any, Literal, get_args

import numpy as np
import torch

from videorl.video.seeking import MIN_SKIP, FrameIndex, plan_seeks

Backend = Literal["pyav", "torchcodec", "decord"]
_MODULE = {"pyav": "av", "torchcodec": "torchcodec", "decord": "decord"}
# How the PyAV reader moves through a file: `auto` chooses per plan (docs/long_videos.md),
# `forward` reads from the first wanted frame to the last (the reader before issue 46),
# `always` seeks to every wanted frame's keyframe (the naive loop, for comparison).
SeekMode = Literal["auto", "forward", "always"]
SEEK_MODES: tuple[str, ...] = get_args(SeekMode)


@dataclass(frozen=True)
class SourceInfo:
    """Frame count and average frame rate of a video file."""

    num_frames: int
    fps: float


Plan = Callable[[SourceInfo], list[int]]
Convert = Callable[[np.ndarray], torch.Tensor]  # H x W x 3 uint8 -> C x H' x W' uint8
Reader = Callable[[str, Plan, Convert], tuple[SourceInfo, torch.Tensor]]


def as_chw(frame: np.ndarray) -> torch.Tensor:
    """The identity conversion: one `H x W x 3` frame as a `3 x H x W` tensor (a view)."""
    return torch.from_numpy(frame).permute(2, 0, 1)


class _StreamEndedEarly(Exception):
    """The container declared more frames than it holds; carries the real count."""

    def __init__(self, num_frames: int) -> None:
        super().__init__(num_frames)
        self.num_frames = num_frames


class _Gather:
    """The planned frames in plan order, written into one tensor allocated at the first
    frame (so the converted frames are held once, not as a list and then a stacked copy)."""

    def __init__(self, indices: Sequence[int]) -> None:
        self.slots: dict[int, list[int]] = {}
        for k, i in enumerate(indices):
            self.slots.setdefault(i, []).append(k)
        self.count = len(indices)
        self.out: torch.Tensor | None = None

    def put(self, index: int, frame: torch.Tensor) -> None:
        if self.out is None:
            self.out = torch.empty((self.count, *frame.shape), dtype=frame.dtype)
        for k in self.slots[index]:
            self.out[k] = frame

    def result(self) -> torch.Tensor:
        assert self.out is not None, "no frame was gathered"
        return self.out


def backend_available(name: str) -> bool:
    return importlib.util.find_spec(_MODULE[name]) is not None


# ----- PyAV ------------------------------------------------------------------------------


def _pyav_info(container: Any, stream: Any) -> SourceInfo:  # av.InputContainer, av.VideoStream
    fps = float(stream.average_rate or stream.guessed_rate or 0)
    count = stream.frames
    if not count:
        # Some containers (webm, some mkv) do not store a frame count; counting packets
        # reads the index only, far cheaper than decoding.
        count = sum(1 for p in container.demux(stream) if p.size)
        container.seek(0)
    return SourceInfo(num_frames=int(count), fps=fps)


def _pyav_index(container: Any, stream: Any, fps: float) -> FrameIndex | None:
    """The stream's frame index: the container's own index when it is one of presentation
    times (`_index_entries`), else from the packets (a demux pass reads no picture: about 20x
    cheaper than decoding); None when a packet has no pts (then the reader reads forward)."""
    start = stream.start_time or 0
    time_base = float(stream.time_base)
    entries = _index_entries(stream, start)
    if entries is not None:
        return FrameIndex.from_packets(entries[0], entries[1], start, time_base, fps)
    pts: list[int] = []
    keys: list[bool] = []
    for packet in container.demux(stream):
        if not packet.size:
            continue
        if packet.pts is None:
            pts = []
            break
        pts.append(packet.pts)
        keys.append(packet.is_keyframe)
    container.seek(0)
    if not pts:
        return None
    return FrameIndex.from_packets(pts, keys, start, time_base, fps)


def _index_entries(stream: Any, start: int) -> tuple[list[int], list[bool]] | None:
    """(timestamps, keyframe flags) of the container's index (MP4 reads it at open), when its
    timestamps are presentation times: they are decode times, equal to presentation times
    only in a stream without reordered (B-) frames, whose first entry then sits at the
    stream's start and which lists every frame in increasing order. None otherwise."""
    if stream.codec_context.has_b_frames or not stream.frames:
        return None
    entries = stream.index_entries
    if len(entries) != stream.frames:
        return None
    stamps = [entry.timestamp for entry in entries]
    if stamps[0] != start or any(b <= a for a, b in pairwise(stamps)):
        return None
    return stamps, [entry.is_keyframe for entry in entries]


def _pyav_decode(
    container: Any,
    stream: Any,
    indices: list[int],
    fps: float,
    convert: Convert,
    seek: SeekMode = "auto",
    stats: dict[str, int] | None = None,
) -> torch.Tensor:
    from av.video.reformatter import VideoReformatter

    wanted = sorted(set(indices))
    counts = {"decoded": 0, "seeks": 0, "restarts": 0}
    # One reformatter per file keeps its scaler context: `frame.to_ndarray(format=...)` builds
    # a new one per frame, 2-4x slower on small frames alone, more on loaded cores (same
    # pixels; bench/decode_convert.py).
    to_rgb = VideoReformatter()
    start_pts = stream.start_time or 0
    time_base = float(stream.time_base)
    gather = _Gather(indices)
    # Sparse plans (wanted frames further apart than a seek's worth) read the frame index.
    sparse = (wanted[-1] - wanted[0]) >= MIN_SKIP * max(len(wanted) - 1, 1)
    index = None
    if seek == "always" or (seek == "auto" and sparse):
        index = _pyav_index(container, stream, fps)
    seeks: list[int | None] = [None] * len(wanted)
    if index is not None:
        seeks = plan_seeks(index, wanted, always=seek == "always")
    elif wanted[0] / fps > 1.0:
        # Reading forward: seek only when the first wanted frame is well into the file
        # (seeking lands on the keyframe before it; short files are cheaper from the start).
        target = int(wanted[0] / fps / time_base) + start_pts
        container.seek(target, stream=stream, backward=True)
    limit: int | None = None  # the pts the first frame after a seek must not pass

    def seek_to(pointer: int) -> Any:
        nonlocal limit
        assert index is not None
        position = seeks[pointer]
        assert position is not None
        container.seek(int(index.pts[position]), stream=stream, backward=True)
        counts["seeks"] += 1
        limit = int(index.pts[index.frame_of(wanted[pointer])])
        return container.decode(stream)

    frames = seek_to(0) if seeks[0] is not None else container.decode(stream)
    pointer, last, counter = 0, -1, 0
    while pointer < len(wanted):
        frame = next(frames, None)
        if frame is None:
            break
        counts["decoded"] += 1
        if limit is not None:
            bound, limit = limit, None
            if frame.pts is None or frame.pts > bound:
                # The seek landed past the wanted frame (a container whose index disagrees
                # with its packets): read the rest forward from the start, as before.
                seeks = [None] * len(wanted)
                counts["restarts"] += 1
                container.seek(0)
                frames, counter = container.decode(stream), 0
                continue
        index_of = (
            counter if frame.pts is None else round((frame.pts - start_pts) * time_base * fps)
        )
        counter += 1
        last = max(last, index_of)
        if index_of < wanted[pointer]:
            continue
        converted = convert(to_rgb.reformat(frame, format="rgb24").to_ndarray())
        # A frame at or past the wanted index stands in for it (variable frame rate gaps).
        while pointer < len(wanted) and wanted[pointer] <= index_of:
            gather.put(wanted[pointer], converted)
            pointer += 1
        if pointer < len(wanted) and seeks[pointer] is not None:
            frames = seek_to(pointer)
    if stats is not None:
        for key, value in counts.items():
            stats[key] = stats.get(key, 0) + value
    if pointer < len(wanted):
        raise _StreamEndedEarly(last + 1)
    return gather.result()


def read_pyav(
    path: str,
    plan: Plan,
    convert: Convert = as_chw,
    seek: SeekMode = "auto",
    stats: dict[str, int] | None = None,
) -> tuple[SourceInfo, torch.Tensor]:
    """Decode with PyAV (`seek`: how it moves through the file, `SeekMode`); if the file ends
    before its declared frame count, re-plan on the frames it really holds and decode again
    (rare: truncated or mis-muxed files). `stats`, when given, adds up the frames `decoded`,
    the `seeks` and the `restarts` (a seek that landed past its frame, read again forward)."""
    import av

    with av.open(path) as container:
        if not container.streams.video:
            raise ValueError("the file has no video stream")
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        # the process's thread budget (a rollout worker's, a rank's), not every core
        stream.codec_context.thread_count = torch.get_num_threads()
        info = _pyav_info(container, stream)
        try:
            return info, _pyav_decode(container, stream, plan(info), info.fps, convert, seek, stats)
        except _StreamEndedEarly as short:
            if short.num_frames < 1:
                raise ValueError("no frame could be decoded") from None
            info = SourceInfo(num_frames=short.num_frames, fps=info.fps)
    with av.open(path) as container:
        stream = container.streams.video[0]
        try:
            return info, _pyav_decode(container, stream, plan(info), info.fps, convert, seek, stats)
        except _StreamEndedEarly:
            raise ValueError("the stream ended before its last frame twice") from None


def pyav_reader(seek: SeekMode, stats: dict[str, int] | None = None) -> Reader:
    """The PyAV reader with a fixed `SeekMode` (the bench and tests compare them)."""
    return partial(read_pyav, seek=seek, stats=stats)


# ----- optional backends -------------------------------------------------------------------


def _convert_batch(batch: np.ndarray, indices: list[int], convert: Convert) -> torch.Tensor:
    """`convert` each frame of a decoded batch (`n x H x W x 3`, in plan order)."""
    gather = _Gather(range(len(indices)))
    for k, frame in enumerate(batch):
        gather.put(k, convert(frame))
    return gather.result()


def read_torchcodec(
    path: str, plan: Plan, convert: Convert = as_chw
) -> tuple[SourceInfo, torch.Tensor]:
    """torchcodec's exact seek mode: it decodes the planned frames as one batch (held at the
    file's resolution before `convert`)."""
    from torchcodec.decoders import VideoDecoder

    decoder = VideoDecoder(path, dimension_order="NHWC", seek_mode="exact")
    meta = decoder.metadata
    info = SourceInfo(num_frames=int(meta.num_frames), fps=float(meta.average_fps))
    indices = plan(info)
    batch = decoder.get_frames_at(indices=indices).data.numpy()
    return info, _convert_batch(batch, indices, convert)


def read_decord(
    path: str, plan: Plan, convert: Convert = as_chw
) -> tuple[SourceInfo, torch.Tensor]:
    from decord import VideoReader, cpu

    reader = VideoReader(path, ctx=cpu(0))
    info = SourceInfo(num_frames=len(reader), fps=float(reader.get_avg_fps()))
    indices = plan(info)
    return info, _convert_batch(reader.get_batch(indices).asnumpy(), indices, convert)


READERS: dict[str, Reader] = {
    "pyav": read_pyav,
    "torchcodec": read_torchcodec,
    "decord": read_decord,
}
