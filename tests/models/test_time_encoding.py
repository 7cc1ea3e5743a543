"""`video.time_encoding`: the sampled timing, or the processor default Video-R1 trained with.

Worked example (Video-R1, tulerfeng/Video-R1 `src/r1-v/src/open_r1/trainer/grpo_trainer.py`
lines 419-437 and `sft_video.py` lines 157-168): `process_vision_info(...,
return_video_kwargs=True)` returns `{"fps": [sample_fps]}`, but the processor is called without
it, so the Qwen2.5-VL processor of that time used its default `fps=2.0`:
`second_per_grid_ts = temporal_patch_size / 2.0 = 1.0`; `compute_loss` then deletes
`second_per_grid_ts` (line 532), and `get_rope_index` defaults to 1.0 as well.

Our video: 20 s at a source 4 fps, sampled at a requested 2 fps capped at 16 frames: the actual
rate is 0.8 fps. By hand, with temporal patch 2 (8 temporal grids):

- `sampled`: `second_per_grid_ts = 2 / 0.8 = 2.5`; grid k's temporal mRoPE id (relative to
  the video's first token) is `int(k * 2.5 * tokens_per_second)`.
- `processor_default`: `second_per_grid_ts = 2 / 2.0 = 1.0`; grid k's id is
  `int(k * 1.0 * tokens_per_second)`, the ids Video-R1's loss saw without the tensor.
- Qwen3-VL writes one time per grid (`<{t:.1f} seconds>`), the mean of its two frames'
  times: the real ones (the last grid past 15 s), or, with the processor default, frame i at
  i / 2 s, so grid k at 0.25 + k (0.25, 1.25, ..., 7.25: "0.2", "1.2", ..., "7.2").
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from videorl.errors import ConfigError
from videorl.models.inputs import collate, encode_prompt, hf_video_metadata
from videorl.models.loading import load_model
from videorl.video.decode import VideoConfig, decode_video
from videorl.video.encode import write_mp4

SOURCE_FPS = 4
GRIDS = 8  # 16 frames / temporal patch 2


def config(time_encoding: str) -> VideoConfig:
    return VideoConfig(
        fps=2.0,
        min_frames=4,
        max_frames=16,
        min_pixels=3136,
        max_pixels=12544,
        time_encoding=time_encoding,  # type: ignore[arg-type]  # each value of the parametrised Literal
    )


@pytest.fixture(scope="module")
def mp4(tmp_path_factory):
    frames = np.zeros((20 * SOURCE_FPS, 56, 56, 3), dtype=np.uint8)
    frames[..., 1] = np.arange(len(frames))[:, None, None] * 3 % 256
    return write_mp4(tmp_path_factory.mktemp("video") / "twenty.mp4", frames, fps=SOURCE_FPS)


@pytest.fixture(scope="module")
def videos(mp4):
    return {name: decode_video(mp4, config(name)) for name in ("sampled", "processor_default")}


@pytest.fixture(scope="module")
def qwen2_5_vl(tiny_model_dir):
    return load_model(tiny_model_dir("qwen2_5_vl"))


def test_the_key_is_checked():
    with pytest.raises(ConfigError, match="time_encoding"):
        VideoConfig(time_encoding="video_r1")  # type: ignore[arg-type]  # a bad value on purpose


def test_both_decode_the_same_frames_and_timestamps(videos):
    sampled, default = videos["sampled"], videos["processor_default"]
    assert torch.equal(sampled.frames, default.frames)
    assert sampled.meta.timestamps == default.meta.timestamps  # rewards use the real times
    assert sampled.meta.fps == pytest.approx(0.8)
    assert default.meta.time_encoding == "processor_default"


def test_metadata_by_hand(videos):
    sampled = hf_video_metadata(videos["sampled"].meta, 16)
    default = hf_video_metadata(videos["processor_default"].meta, 16)
    assert sampled.sampled_fps == pytest.approx(0.8)
    assert default.sampled_fps == 2.0
    assert default.frames_indices == list(range(16))
    assert default.timestamps == [i / 2 for i in range(16)]


def temporal_ids(loaded, prompt) -> list[int]:
    """The temporal mRoPE id of each temporal grid, relative to the video's first token."""
    inputs, _ = collate([prompt], None, loaded.pad_token_id)
    args = {
        k: inputs[k]
        for k in (
            "input_ids",
            "mm_token_type_ids",
            "video_grid_thw",
            "second_per_grid_ts",
            "attention_mask",
        )
        if k in inputs
    }
    positions, _ = loaded.model.model.get_rope_index(**args)
    video = (prompt.input_ids == loaded.model.config.video_token_id).nonzero().flatten()
    t = positions[0, 0, video]
    per_grid = video.numel() // GRIDS
    return [int(x) - int(t[0]) for x in t[::per_grid]]


def test_qwen2_5_vl_second_per_grid_and_mrope_ids(qwen2_5_vl, videos):
    tps = qwen2_5_vl.model.config.vision_config.tokens_per_second
    sampled = encode_prompt(qwen2_5_vl, "When?", video=videos["sampled"])
    default = encode_prompt(qwen2_5_vl, "When?", video=videos["processor_default"])
    assert sampled.vision["second_per_grid_ts"].tolist() == pytest.approx([2.5])
    assert default.vision["second_per_grid_ts"].tolist() == pytest.approx([1.0])
    assert torch.equal(sampled.input_ids, default.input_ids)  # same tokens, other positions
    assert temporal_ids(qwen2_5_vl, sampled) == [int(k * 2.5 * tps) for k in range(GRIDS)]
    assert temporal_ids(qwen2_5_vl, default) == [int(k * 1.0 * tps) for k in range(GRIDS)]
    assert temporal_ids(qwen2_5_vl, sampled) != temporal_ids(qwen2_5_vl, default)
    # Video-R1's compute_loss deletes second_per_grid_ts: the model's default gives the same ids
    deleted = type(default)(
        input_ids=default.input_ids,
        mm_token_type_ids=default.mm_token_type_ids,
        vision={k: v for k, v in default.vision.items() if k != "second_per_grid_ts"},
    )
    assert temporal_ids(qwen2_5_vl, deleted) == temporal_ids(qwen2_5_vl, default)


def test_qwen3_vl_timestamps_in_the_text(tiny_model_dir, videos):
    loaded = load_model(tiny_model_dir("qwen3_vl"))

    def written(video) -> list[str]:
        text = loaded.tokenizer.decode(encode_prompt(loaded, "When?", video=video).input_ids)
        return re.findall(r"<([0-9.]+) seconds>", text)

    stamps = videos["sampled"].meta.timestamps
    real = [(stamps[2 * k] + stamps[2 * k + 1]) / 2 for k in range(GRIDS)]
    assert written(videos["sampled"]) == [f"{t:.1f}" for t in real]  # the processor's format
    assert real[-1] > 15.0
    assert written(videos["processor_default"]) == [f"{0.25 + k:.1f}" for k in range(GRIDS)]


def test_vllm_gets_the_same_metadata(videos):
    from videorl.rollout.vllm_support import video_item

    _, fields = video_item(videos["processor_default"])
    assert fields["fps"] == 2.0
    assert fields["frames_indices"] == list(range(16))
    assert fields["do_sample_frames"] is False
