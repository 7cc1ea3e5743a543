"""Each recipe trains 2 steps on the tiny model: parameters change, metrics and a loadable
checkpoint are written; the loss forward sees the rollout's video tensors."""

from __future__ import annotations

import json

import pytest
import torch

from videorl.models.loading import load_model
from videorl.trainer.loop import run_training


def _weights(path) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in load_model(path).model.state_dict().items()}


@pytest.mark.parametrize("recipe", ["orarl", "grpo", "taro", "opdvr"])
def test_recipe_trains_and_checkpoints(make_config, recipe):
    config, _ = make_config(
        recipe, "trainer.steps=2", "trainer.save_every=1", "trainer.keep_last=1"
    )
    before = _weights(config.model.path)
    final = run_training(config)
    after = _weights(final)
    changed = [k for k in before if "visual" not in k and not torch.equal(before[k], after[k])]
    assert changed, "no language-model parameter changed"
    assert all(
        torch.equal(before[k], after[k]) for k in before if "visual" in k
    )  # vision tower frozen
    rows = [json.loads(line) for line in (final.parent / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2]
    assert all("reward/mean" in r and "actor/loss" in r and "time/update" in r for r in rows)
    checkpoints = sorted(p.name for p in final.parent.glob("step-*"))
    assert checkpoints == ["step-000002"]  # keep_last=1
    assert (final.parent / "reward_curves.png").stat().st_size > 0
    if recipe == "orarl":
        assert rows[0]["rows/kept"] == 2 * 2 and rows[0]["rows/total"] == 2 * 5
    if recipe == "taro":
        assert rows[0]["rollout/constructed_rows"] > 0
        assert "sensitivity/d_mean" in rows[0]
    if recipe == "opdvr":
        assert "distill/frac_correct" in rows[0]


def test_loss_forward_receives_the_rollout_video(make_config, monkeypatch):
    """The pixel values in the update's forward are exactly those the rollout generated from."""
    from videorl.models import generate as generate_module
    from videorl.trainer import update as update_module

    seen = {"rollout": [], "update": []}
    real_generate = generate_module.generate

    def spy_generate(loaded, prompts, params):
        for p in prompts:
            seen["rollout"].append(p.vision["pixel_values_videos"])
        return real_generate(loaded, prompts, params)

    real_logprobs = update_module.response_logprobs

    def spy_logprobs(model, inputs, *args, **kwargs):
        assert "pixel_values_videos" in inputs and "video_grid_thw" in inputs
        seen["update"].append((inputs["pixel_values_videos"], inputs["video_grid_thw"]))
        return real_logprobs(model, inputs, *args, **kwargs)

    monkeypatch.setattr("videorl.rollout.engine.generate", spy_generate)
    monkeypatch.setattr(update_module, "response_logprobs", spy_logprobs)
    config, _ = make_config("grpo", "trainer.steps=1")
    run_training(config)
    assert seen["update"], "the update never ran a forward"
    for pixels, grids in seen["update"]:
        # split the micro-batch's pixels into each row's video by its (t, h, w) patch grid
        blocks = pixels.split([int(g.prod()) for g in grids])
        for block in blocks:
            assert any(block.shape == r.shape and torch.equal(block, r) for r in seen["rollout"])
