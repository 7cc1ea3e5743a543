"""Video decoding backends: PyAV (default), torchcodec and decord (optional installs).

Each backend is a function `read(path, plan) -> (SourceInfo, frames)`: it opens the file,
learns its frame count and rate, asks `plan(info)` for the source frame indices, and
returns those frames as a uint8 array `n x H x W x 3` (RGB), in the order of the plan.
Errors propagate raw; `decode.py` turns them into a `MediaError` naming the file.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, get_args

import numpy as np

Backend = Literal["pyav", "torchcodec", "decord"]
BACKENDS: tuple[str, ...] = get_args(Backend)
_MODULE = {"pyav": "av", "torchcodec": "torchcodec", "decord": "decord"}


@dataclass(frozen=True)
class SourceInfo:
    """Frame count and average frame rate of a video file."""

    num_frames: int
    fps: float


Plan = Callable[[SourceInfo], list[int]]
Reader = Callable[[str, Plan], tuple[SourceInfo, np.ndarray]]


class _StreamEndedEarly(Exception):
    """The container declared more frames than it holds; carries the real count."""

    def __init__(self, num_frames: int) -> None:
        super().__init__(num_frames)
        self.num_frames = num_frames


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


def _pyav_decode(container: Any, stream: Any, indices: list[int], fps: float) -> np.ndarray:
    wanted = sorted(set(indices))
    start_pts = stream.start_time or 0
    time_base = float(stream.time_base)
    # Seek only when the first wanted frame is well into the file: seeking lands on the
    # keyframe before it, and short files are cheaper to read from the start.
    if wanted[0] / fps > 1.0:
        target = int(wanted[0] / fps / time_base) + start_pts
        container.seek(target, stream=stream, backward=True)
    picked: dict[int, np.ndarray] = {}
    pointer, last = 0, -1
    for counter, frame in enumerate(container.decode(stream)):
        index = counter if frame.pts is None else round((frame.pts - start_pts) * time_base * fps)
        last = max(last, index)
        if index < wanted[pointer]:
            continue
        array = frame.to_ndarray(format="rgb24")
        # A frame at or past the wanted index stands in for it (variable frame rate gaps).
        while pointer < len(wanted) and wanted[pointer] <= index:
            picked[wanted[pointer]] = array
            pointer += 1
        if pointer == len(wanted):
            break
    if pointer < len(wanted):
        raise _StreamEndedEarly(last + 1)
    return np.stack([picked[i] for i in indices])


def read_pyav(path: str, plan: Plan) -> tuple[SourceInfo, np.ndarray]:
    """Decode with PyAV; if the file ends before its declared frame count, re-plan on the
    frames it really holds and decode again (rare: truncated or mis-muxed files)."""
    import av

    with av.open(path) as container:
        if not container.streams.video:
            raise ValueError("the file has no video stream")
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        info = _pyav_info(container, stream)
        try:
            return info, _pyav_decode(container, stream, plan(info), info.fps)
        except _StreamEndedEarly as short:
            if short.num_frames < 1:
                raise ValueError("no frame could be decoded") from None
            info = SourceInfo(num_frames=short.num_frames, fps=info.fps)
    with av.open(path) as container:
        stream = container.streams.video[0]
        try:
            return info, _pyav_decode(container, stream, plan(info), info.fps)
        except _StreamEndedEarly:
            raise ValueError("the stream ended before its last frame twice") from None


# ----- optional backends -------------------------------------------------------------------


def read_torchcodec(path: str, plan: Plan) -> tuple[SourceInfo, np.ndarray]:
    from torchcodec.decoders import VideoDecoder

    decoder = VideoDecoder(path, dimension_order="NHWC")
    meta = decoder.metadata
    info = SourceInfo(num_frames=int(meta.num_frames), fps=float(meta.average_fps))
    return info, decoder.get_frames_at(indices=plan(info)).data.numpy()


def read_decord(path: str, plan: Plan) -> tuple[SourceInfo, np.ndarray]:
    from decord import VideoReader, cpu

    reader = VideoReader(path, ctx=cpu(0))
    info = SourceInfo(num_frames=len(reader), fps=float(reader.get_avg_fps()))
    return info, reader.get_batch(plan(info)).asnumpy()


READERS: dict[str, Reader] = {
    "pyav": read_pyav,
    "torchcodec": read_torchcodec,
    "decord": read_decord,
}
