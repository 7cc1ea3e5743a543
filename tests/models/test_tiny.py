"""Each tiny architecture saves, loads like a checkpoint, runs a video forward and generates."""

from __future__ import annotations

import types

import pytest
import torch

from videorl.models.generate import SamplingParams, generate
from videorl.models.inputs import collate, encode_prompt
from videorl.models.loaded import VISION_TOKENS
from videorl.models.loading import load_model
from videorl.models.tiny import count_parameters

VISION_ARCHS = ("qwen2_5_vl", "qwen3_vl", "qwen3_5")


def fake_video(num_frames: int = 8, fps: float = 2.0, size: int = 64):
    """Decoded-video stand-in: random frames and their sampling metadata."""
    meta = types.SimpleNamespace(
        source_fps=8.0,
        fps=fps,
        timestamps=[i / fps for i in range(num_frames)],
        width=size,
        height=size,
    )
    frames = torch.randint(0, 255, (num_frames, 3, size, size), dtype=torch.uint8)
    return types.SimpleNamespace(frames=frames, meta=meta)


@pytest.mark.parametrize("arch", VISION_ARCHS + ("qwen3",))
def test_tiny_model_loads_and_generates(tiny_model_dir, arch):
    loaded = load_model(tiny_model_dir(arch))
    params = count_parameters(loaded.model)
    assert 0.2e6 <= params <= 2e6
    assert (
        loaded.model.config.get_text_config().hidden_size  # type: ignore[operator]  # nn.Module types attributes as Tensor | Module
        // loaded.model.config.get_text_config().num_attention_heads  # type: ignore[operator]  # nn.Module types attributes as Tensor | Module
        >= 32
    )
    video = fake_video() if arch != "qwen3" else None
    prompt = encode_prompt(loaded, "When does the square turn red?", video=video)
    if video is not None:
        assert "pixel_values_videos" in prompt.vision
    inputs, _ = collate([prompt], None, loaded.pad_token_id)
    logits = loaded.model(**inputs).logits
    assert logits.shape[:2] == inputs["input_ids"].shape
    torch.manual_seed(0)
    (gen,) = generate(loaded, [prompt], SamplingParams(n=3, max_new_tokens=6))
    assert len(gen.token_ids) == 3
    assert all(1 <= t.numel() <= 6 for t in gen.token_ids)


@pytest.mark.parametrize("arch", ["qwen2_5_vl", "qwen3"])
def test_vision_tokens_are_never_generated(tiny_model_dir, arch):
    loaded = load_model(tiny_model_dir(arch))
    banned = loaded.banned_token_ids
    assert len(banned) == len(VISION_TOKENS)
    video = fake_video() if arch != "qwen3" else None
    prompt = encode_prompt(loaded, "Describe the video.", video=video)
    inputs, _ = collate([prompt], None, loaded.pad_token_id)
    head = loaded.model.get_output_embeddings().weight  # type: ignore[operator]  # nn.Module types attributes as Tensor | Module
    with torch.no_grad():  # make a vision placeholder the model's overwhelming favourite
        hidden = loaded.model.model(**inputs).last_hidden_state[0, -1]  # type: ignore[operator]  # nn.Module types attributes as Tensor | Module
        head[banned[3]] = 100.0 * hidden / hidden.norm() ** 2
        favourite = loaded.model(**inputs).logits[0, -1].argmax().item()
    assert favourite == banned[3]  # without the ban this token would be chosen
    (gen,) = generate(loaded, [prompt], SamplingParams(n=4, max_new_tokens=8, temperature=0.7))
    for tokens in gen.token_ids:
        assert not set(tokens.tolist()) & set(banned)
