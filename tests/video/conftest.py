"""Tiny real MP4 files whose frames say their own index (gray level = 3 * index)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from videorl.video.decode import VideoConfig
from videorl.video.encode import write_mp4

LEVEL = 3  # gray step per frame: survives compression, decodes back with round(mean / 3)


def index_frames(num_frames: int, height: int = 64, width: int = 64) -> np.ndarray:
    levels = (np.arange(num_frames) * LEVEL).astype(np.uint8)
    return np.broadcast_to(levels[:, None, None, None], (num_frames, height, width, 3)).copy()


def frame_numbers(frames: torch.Tensor) -> list[int]:
    """The index each decoded frame was drawn with."""
    return [round(float(f.float().mean()) / LEVEL) for f in frames]


@pytest.fixture
def make_video(tmp_path):
    """`make_video(seconds, fps=8, height=64, width=64) -> path` of an index-coded MP4."""

    def make(seconds: float, fps: int = 8, height: int = 64, width: int = 64, name: str = "v.mp4"):
        frames = index_frames(round(seconds * fps), height, width)
        return write_mp4(tmp_path / name, frames, fps)

    return make


@pytest.fixture
def native() -> VideoConfig:
    """Keeps 64 px frames at their size (factor 2, no pixel floor) so content can be read."""
    return VideoConfig(min_pixels=4, max_pixels=256 * 256, factor=2)
