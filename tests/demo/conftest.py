"""A loaded tiny model, the bundled examples and small videos, shared by the demo tests."""

from __future__ import annotations

import numpy as np
import pytest

from videorl.video.encode import write_mp4


@pytest.fixture(scope="session")
def tiny_loaded(tiny_model_dir):
    from videorl.models.loading import load_model

    return load_model(tiny_model_dir("qwen2_5_vl"))


@pytest.fixture(scope="session")
def examples(tmp_path_factory):
    from videorl.demo.examples import make_examples

    return make_examples(tmp_path_factory.mktemp("demo_examples"))


@pytest.fixture
def make_video(tmp_path):
    """`make_video(seconds, fps=8) -> path` of a small gray MP4."""

    def make(seconds: float, fps: int = 8, name: str = "clip.mp4") -> str:
        frames = np.full((round(seconds * fps), 32, 48, 3), 90, dtype=np.uint8)
        return str(write_mp4(tmp_path / name, frames, fps))

    return make


@pytest.fixture(scope="module")
def demo(tiny_loaded):
    """The running demo on the tiny model (one per test module)."""
    from videorl.demo.app import running_demo
    from videorl.demo.inference import Settings

    with running_demo(tiny_loaded, title="tiny", settings=Settings(max_new_tokens=32)) as running:
        yield running
