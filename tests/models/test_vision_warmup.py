"""The vision warm-up makes a random tower's tokens move with the frame's content, and
leaves the language model alone (models/vision_warmup.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from videorl.data.synth_clips import warmup_clip
from videorl.data.synth_scene import Placed, render_frame
from videorl.models.tiny import make_model
from videorl.models.vision_warmup import (
    WarmupSettings,
    encode_clip,
    tower_output,
    warm_up_vision,
)


def _tokens(model, processor, frames: np.ndarray, settings: WarmupSettings) -> torch.Tensor:
    with torch.no_grad():
        encoded = encode_clip(processor, frames, settings)
        return tower_output(model.model.visual, encoded["pixels"], encoded["grid"])


def _event_gap(model, processor, settings: WarmupSettings) -> float:
    """Largest distance between a frame pair with a large shape and an empty one, per visual
    token, relative to the empty tokens' norm."""
    empty = render_frame(64, 96, [])
    shown = render_frame(64, 96, [Placed("circle", "red", 20, 10, 36)])
    a = _tokens(model, processor, np.stack([empty, empty, shown, shown]), settings)
    b = _tokens(model, processor, np.stack([empty] * 4), settings)
    return float((a - b).norm(dim=-1).max() / b.norm(dim=-1).mean())


def _nuisance_share(model, processor, settings: WarmupSettings) -> float:
    """Over clips the warm-up did not draw: how far the observed clip's tokens sit from its
    clean content's, relative to how far content changes move the clean tokens over time."""
    nuisance, content = [], []
    for k in range(6):
        observed, clean = warmup_clip(np.random.default_rng([99, k]), (4, 8))
        a = _tokens(model, processor, observed, settings)
        b = _tokens(model, processor, clean, settings)
        per_pair = b.view(observed.shape[0] // 2, -1, b.shape[-1])
        nuisance.append(float((a - b).norm(dim=-1).mean()))
        content.append(float((per_pair - per_pair.mean(0)).norm(dim=-1).mean()))
    return sum(nuisance) / max(sum(content), 1e-9)


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


def test_the_broad_warmup_keeps_nuisance_out_of_the_tokens():
    torch.manual_seed(0)
    model, processor = make_model("qwen3_vl", "tiny", seed=0, small_vocab=True)
    settings = WarmupSettings(steps=40, clips=24, frames=(4, 8), seed=0, kind="broad")
    before = _event_gap(model, processor, settings), _nuisance_share(model, processor, settings)
    report = warm_up_vision(model, processor, settings)
    after = _event_gap(model, processor, settings), _nuisance_share(model, processor, settings)
    assert report.last_loss < 0.5 * report.first_loss
    # nuisance moves the tokens far less, relative to content, than in the random tower;
    # a shape still moves them (its share of the targets is smaller than in the shape
    # warm-up: 0.72 -> 0.62 when written, where a collapsed tower gives 0)
    assert after[1] < 0.3 * before[1], (before, after)
    assert after[0] > 0.5 * before[0], (before, after)


def test_warmup_runs_on_qwen2_5_vl_towers():
    model, processor = make_model("qwen2_5_vl", "tiny", seed=0, small_vocab=True)
    report = warm_up_vision(model, processor, WarmupSettings(steps=3, clips=4, frames=(4, 4)))
    assert report.steps == 3 and np.isfinite(report.last_loss)


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


def test_make_tiny_names_the_clip_kinds_on_a_wrong_one(tmp_path, capsys, monkeypatch):
    from tests.cli_runner import run_cli

    args = ("make-tiny", tmp_path / "m", "--vision-warmup", "2", "--vision-warmup-clips", "real")
    result = run_cli(capsys, monkeypatch, *args)
    assert result.code != 0
    assert "--vision-warmup-clips 'real' is unknown; choose broad or shape" in result.output
