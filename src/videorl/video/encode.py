"""Write frames to real media files: MP4 through PyAV, images through Pillow.

Used by the synthetic data generator and by tests; the files decode with every backend.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

import numpy as np

from videorl.errors import MediaError


def mp4_encoder() -> Literal["libx264", "mpeg4"]:
    """`libx264` when the installed PyAV has it, else FFmpeg's built-in `mpeg4`."""
    import av

    return "libx264" if "libx264" in av.codecs_available else "mpeg4"


def write_mp4(path: str | os.PathLike, frames: np.ndarray, fps: int) -> Path:
    """Encode uint8 RGB frames `T x H x W x 3` (H, W even: yuv420p) at a constant `fps`.

    High quality (libx264 crf 12) so colours survive the round trip; one encoder thread so
    the same frames give the same bytes.
    """
    import av

    frames = np.asarray(frames)
    if frames.ndim != 4 or frames.shape[-1] != 3 or frames.dtype != np.uint8 or not len(frames):
        raise MediaError(
            f"write_mp4 needs uint8 frames T x H x W x 3, got {frames.dtype} {frames.shape}"
        )
    height, width = frames.shape[1:3]
    if height % 2 or width % 2:
        raise MediaError(f"write_mp4 needs even frame sizes for yuv420p, got {width}x{height}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    codec = mp4_encoder()
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream(codec, rate=int(fps))
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.codec_context.thread_count = 1
        if codec == "libx264":
            stream.options = {"crf": "12", "preset": "fast"}
        else:
            stream.codec_context.bit_rate = 4_000_000
        for array in frames:
            for packet in stream.encode(av.VideoFrame.from_ndarray(array, format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return path


def write_image(path: str | os.PathLike, image: np.ndarray) -> Path:
    """Save a uint8 RGB image `H x W x 3`; the format follows the suffix (PNG is lossless)."""
    from PIL import Image

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.asarray(image, dtype=np.uint8)).save(path)
    return path
