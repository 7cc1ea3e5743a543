"""Passing `cap_pixels_per_frame=True` (which silences transformers' FutureWarning) leaves
the vision tokens of videorl's already-resized frames unchanged."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from videorl.models.inputs import chat_messages, encode_prompt, hf_video_metadata
from videorl.models.loading import load_model
from videorl.video.decode import VideoConfig, decode_video
from videorl.video.encode import write_mp4


@pytest.mark.parametrize("arch", ["qwen2_5_vl", "qwen3_vl"])
def test_capped_encoding_equals_uncapped(tiny_model_dir, tmp_path, arch):
    loaded = load_model(tiny_model_dir(arch))
    frames = np.random.default_rng(0).integers(0, 255, (40, 120, 200, 3), dtype=np.uint8)
    video = decode_video(write_mp4(tmp_path / "v.mp4", frames, 8), VideoConfig(max_frames=8))
    encoded = encode_prompt(loaded, "when?", video=video)
    prompt = loaded.processor.apply_chat_template(
        chat_messages("when?", video=True), add_generation_prompt=True, tokenize=False
    )
    uncapped = loaded.processor(  # type: ignore[misc]  # a VL model has a processor
        text=[prompt],
        videos=[video.frames],
        video_metadata=[hf_video_metadata(video.meta, int(video.frames.shape[0]))],
        do_sample_frames=False,
        cap_pixels_per_frame=False,
        return_tensors="pt",
    )
    assert torch.equal(encoded.input_ids, uncapped["input_ids"][0])
    assert torch.equal(encoded.vision["video_grid_thw"], uncapped["video_grid_thw"])
    assert torch.equal(encoded.vision["pixel_values_videos"], uncapped["pixel_values_videos"])
