"""The vision warm-up makes a random tower's tokens move with the frame's content, and
leaves the language model alone (models/vision_warmup.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from videorl.models.tiny import make_model
from videorl.models.vision_warmup import (
    WarmupSettings,
    encode_clip,
    random_clip,
    tower_output,
    warm_up_vision,
)


def _event_gap(model, processor, settings: WarmupSettings) -> float:
    """Mean distance between a frame pair with a shape and an empty one, per visual token,
    relative to the empty tokens' norm."""
    clip = random_clip(np.random.default_rng(7), settings)
    empty = np.full_like(clip, clip.min())  # every frame the plain background
    with torch.no_grad():
        shown = encode_clip(processor, clip, settings)
        blank = encode_clip(processor, empty, settings)
        a = tower_output(model.model.visual, shown["pixels"], shown["grid"])
        b = tower_output(model.model.visual, blank["pixels"], blank["grid"])
    return float((a - b).norm(dim=-1).max() / b.norm(dim=-1).mean())


def test_warmup_separates_content_and_leaves_the_language_model():
    torch.manual_seed(0)
    model, processor = make_model("qwen3_vl", "tiny", seed=0, small_vocab=True)
    settings = WarmupSettings(steps=40, clips=24, frames=(4, 8), seed=0)
    language = {k: v.clone() for k, v in model.model.language_model.state_dict().items()}
    before = _event_gap(model, processor, settings)
    report = warm_up_vision(model, processor, settings)
    after = _event_gap(model, processor, settings)
    assert report.last_loss < 0.5 * report.first_loss
    assert after > 3 * before, (before, after)
    for name, value in model.model.language_model.state_dict().items():
        assert torch.equal(value, language[name]), name


def test_warmup_runs_on_qwen2_5_vl_towers():
    model, processor = make_model("qwen2_5_vl", "tiny", seed=0, small_vocab=True)
    report = warm_up_vision(model, processor, WarmupSettings(steps=3, clips=4, frames=(4, 4)))
    assert report.steps == 3 and np.isfinite(report.last_loss)


def test_random_clip_shows_the_shape_over_an_interval():
    settings = WarmupSettings(frames=(8, 8))
    clip = random_clip(np.random.default_rng(3), settings)
    assert clip.shape[0] == 8 and clip.dtype == np.uint8
    shown = [bool((frame != clip.min()).any()) for frame in clip]
    assert any(shown)
    first, last = shown.index(True), len(shown) - shown[::-1].index(True)
    assert all(shown[first:last])


@pytest.mark.parametrize("arch", ["qwen3"])
def test_text_models_refuse_a_vision_warmup(tmp_path, arch):
    from videorl.errors import ConfigError
    from videorl.models.tiny import build_model

    with pytest.raises(ConfigError, match="text-only"):
        build_model(arch, tmp_path / "m", vision_warmup=WarmupSettings(steps=1))


def test_make_tiny_cli_warms_the_tower(tmp_path, capsys, monkeypatch):
    from tests.cli_runner import run_cli

    out = tmp_path / "model"
    args = ("make-tiny", out, "--arch", "qwen3_vl", "--vision-warmup", "2")
    result = run_cli(capsys, monkeypatch, *args)
    assert result.code == 0, result.output
    assert "vision tower warmed up: 2 steps" in result.output
    assert (out / "model.safetensors").exists()
