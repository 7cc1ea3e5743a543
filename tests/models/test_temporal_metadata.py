"""The processor gets the *actual* sampled fps and timestamps (docs/methods.md#video-contract).

A 20 s video sampled at a requested 2 fps but capped at 16 frames has an actual fps of 0.8:
Qwen2.5-VL must get `second_per_grid_ts = 2 / 0.8 = 2.5`, Qwen3-VL must write the sampled
frames' timestamps into the text. The naive path (the requested fps) gets both wrong.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from transformers.video_utils import VideoMetadata

from videorl.models.inputs import encode_prompt
from videorl.models.loading import load_model
from videorl.video.decode import VideoConfig, decode_video
from videorl.video.encode import write_mp4

SOURCE_FPS = 4


@pytest.fixture(scope="module")
def twenty_seconds(tmp_path_factory):
    frames = np.zeros((20 * SOURCE_FPS, 56, 56, 3), dtype=np.uint8)
    frames[..., 0] = np.arange(len(frames))[:, None, None] * 3 % 256
    path = write_mp4(tmp_path_factory.mktemp("video") / "twenty.mp4", frames, fps=SOURCE_FPS)
    config = VideoConfig(fps=2.0, min_frames=4, max_frames=16, min_pixels=3136, max_pixels=12544)
    return decode_video(path, config)


def test_sampling_gives_actual_fps(twenty_seconds):
    meta = twenty_seconds.meta
    assert twenty_seconds.frames.shape[0] == 16
    assert meta.fps == pytest.approx(0.8)
    assert meta.duration == pytest.approx(20.0)


def test_qwen2_5_vl_gets_second_per_grid_from_actual_fps(tiny_model_dir, twenty_seconds):
    loaded = load_model(tiny_model_dir("qwen2_5_vl"))
    prompt = encode_prompt(loaded, "When?", video=twenty_seconds)
    assert prompt.vision["second_per_grid_ts"].tolist() == pytest.approx([2.5])
    naive = loaded.processor(  # type: ignore[misc]  # a VL model has a processor
        text=["<|vision_start|><|video_pad|><|vision_end|>When?"],
        videos=[twenty_seconds.frames],
        video_metadata=[
            VideoMetadata(total_num_frames=16, fps=2.0, frames_indices=list(range(16)))
        ],
        do_sample_frames=False,
        return_tensors="pt",
    )
    assert naive["second_per_grid_ts"].tolist() != pytest.approx([2.5])  # requested fps: 1.0


def test_qwen3_vl_writes_the_sampled_timestamps(tiny_model_dir, twenty_seconds):
    loaded = load_model(tiny_model_dir("qwen3_vl"))
    prompt = encode_prompt(loaded, "When?", video=twenty_seconds)
    text = loaded.tokenizer.decode(prompt.input_ids)
    written = [float(t) for t in re.findall(r"<([0-9.]+) seconds>", text)]
    stamps = twenty_seconds.meta.timestamps
    expected = [
        (stamps[i] + stamps[i + 1]) / 2 for i in range(0, len(stamps), 2)
    ]  # one per temporal patch
    assert written == pytest.approx(expected, abs=0.05)
    assert written[-1] > 15.0  # spans the whole 20 s, not 16 frames at the requested 2 fps (8 s)
