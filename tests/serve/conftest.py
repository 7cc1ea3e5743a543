"""A tiny model served on 127.0.0.1 (one per test module) and small media to send it."""

from __future__ import annotations

import numpy as np
import pytest

from videorl.video.decode import VideoConfig

# Small frames and few of them, as the eval tests use: the tiny model stays fast on a CPU.
SMALL_VIDEO = VideoConfig(
    fps=2.0, min_frames=2, max_frames=4, min_pixels=28 * 28, max_pixels=4 * 28 * 28
)


@pytest.fixture(scope="module")
def loaded(tiny_model_dir):
    from videorl.models.loading import load_model

    return load_model(tiny_model_dir("qwen2_5_vl"))


@pytest.fixture(scope="module")
def media_root(tmp_path_factory):
    """A media root holding `clip.mp4` (3 s, 8 fps, 64x48), `still.png` and two broken files."""
    from PIL import Image

    from videorl.video.encode import write_mp4

    root = tmp_path_factory.mktemp("media_root")
    rng = np.random.default_rng(0)
    write_mp4(root / "clip.mp4", rng.integers(0, 255, (24, 48, 64, 3), dtype=np.uint8), 8)
    Image.fromarray(rng.integers(0, 255, (40, 56, 3), dtype=np.uint8)).save(root / "still.png")
    (root / "broken.png").write_bytes(b"\x89PNG not really")
    (root / "broken.mp4").write_bytes(b"\x00" * 256)
    return root


def start_server(loaded, media_root, api_key=None, **limits):
    """A running `ServerThread` (use as a context manager) and its generation queue."""
    from videorl.serve.app import ServerThread, create_app
    from videorl.serve.chat import ChatService
    from videorl.serve.engine import GenerationQueue
    from videorl.serve.limits import ServeLimits
    from videorl.serve.media import MediaPolicy

    settings = {"max_new_tokens": 8, "max_n": 4, "body_timeout_s": 1.0, **limits}
    policy = MediaPolicy(SMALL_VIDEO, ServeLimits(**settings), media_root)
    queue = GenerationQueue(loaded, max_batch=settings.get("max_batch", 8))
    app = create_app(ChatService(loaded, "tiny", policy), queue, api_key)
    return ServerThread(app, "127.0.0.1", 0, header_timeout_s=settings["body_timeout_s"]), queue


@pytest.fixture(scope="module")
def server(loaded, media_root):
    handle, queue = start_server(loaded, media_root, max_body_bytes=2 * 1024**2)
    with handle:
        yield handle
    queue.close()
