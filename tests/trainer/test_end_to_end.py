"""Each recipe trains 2 steps on the tiny model: parameters change, metrics and a loadable
checkpoint are written; the loss forward sees the rollout's video tensors."""

from __future__ import annotations

import json
from typing import Any

import pytest
import torch

from videorl.config import load_config
from videorl.models.loading import load_model
from videorl.trainer.loop import run_training

pytestmark = pytest.mark.slow  # multi-process or whole-run: `make test`, not `make test-fast`


def _weights(path) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in load_model(path).model.state_dict().items()}


@pytest.mark.parametrize("recipe", ["orarl", "grpo", "taro", "opdvr", "grpd"])
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
    _assert_reward_curve_drawn(final.parent / "reward_curves.png")
    assert load_config(final.parent / "config.yaml") == config  # the run's resolved config
    if recipe == "orarl":
        assert rows[0]["rows/kept"] == 2 * 2 and rows[0]["rows/total"] == 2 * 5
    if recipe == "taro":
        assert rows[0]["rollout/constructed_rows"] > 0
        assert "sensitivity/d_mean" in rows[0]
    if recipe in ("opdvr", "grpd"):
        assert "distill/frac_correct" in rows[0]
    if recipe == "grpd":
        assert "distill/scale_mean" in rows[0]


def _assert_reward_curve_drawn(png) -> None:
    """A PNG 700 px wide (7 in at 100 dpi; 4 in or more tall, a panel per kind of curve)
    with a drawn curve, not a blank canvas."""
    import matplotlib.image

    image = matplotlib.image.imread(png)
    assert image.shape[1] == 700 and image.shape[0] >= 400
    plot = image[:, 90:650, :3].reshape(-1, 3)  # between the axes' edges, every panel
    colored = (plot.max(1) - plot.min(1)) > 0.2  # the curve's color, not white/grey/black
    assert colored.sum() > 50, "no curve drawn"


def test_loss_forward_receives_the_rollout_video(make_config, monkeypatch, tmp_path):
    """The pixel values in the update's forward are exactly those the rollout generated from."""
    from videorl.models import generate as generate_module

    seen: dict[str, list[Any]] = {"rollout": [], "update": []}
    real_generate = generate_module.generate

    def spy_generate(loaded, prompts, params, **kwargs):
        for p in prompts:
            seen["rollout"].append(p.vision["pixel_values_videos"])
        return real_generate(loaded, prompts, params, **kwargs)

    from videorl.models import logprobs as logprobs_module

    def record(inputs):
        assert "pixel_values_videos" in inputs and "video_grid_thw" in inputs
        seen["update"].append((inputs["pixel_values_videos"], inputs["video_grid_thw"]))

    real_pack, real_collate = logprobs_module.pack_rows, logprobs_module.collate

    def spy_pack(*args, **kwargs):  # padding-free packed forwards (the default)
        packed = real_pack(*args, **kwargs)
        record(packed.inputs)
        return packed

    def spy_collate(*args, **kwargs):  # padded forwards
        inputs, mask = real_collate(*args, **kwargs)
        record(inputs)
        return inputs, mask

    monkeypatch.setattr("videorl.rollout.engine.generate", spy_generate)
    monkeypatch.setattr(logprobs_module, "pack_rows", spy_pack)
    monkeypatch.setattr(logprobs_module, "collate", spy_collate)
    monkeypatch.setattr("videorl.models.shared_prompt.collate", spy_collate)  # shared prompts
    for packing in ("true", "false"):
        seen["update"].clear()
        config, _ = make_config(
            "grpo", "trainer.steps=1", f"model.packing={packing}", output=tmp_path / packing
        )
        run_training(config)
        assert seen["update"], "the update never ran a forward"
        for pixels, grids in seen["update"]:
            # split the micro-batch's pixels into each row's video by its (t, h, w) patch grid
            blocks = pixels.split([int(g.prod()) for g in grids])
            for block in blocks:
                assert any(
                    block.shape == r.shape and torch.equal(block, r) for r in seen["rollout"]
                )


def test_packed_training_equals_padded(make_config, tmp_path):
    """One OraRL step with padding-free packed rows updates the weights as padded rows do
    (same seed, same rollouts; only the layout of the log-prob forwards differs). At lr 1e-3:
    Adam turns fp32 summation-order noise on near-zero gradients into ~lr-sized steps."""
    weights, losses = {}, {}
    for packing in ("false", "true"):
        config, _ = make_config(
            "orarl",
            "trainer.steps=1",
            "optim.lr=1e-3",
            "optim.mini_batches=2",  # old log-probs + two updates: every forward is used
            f"model.packing={packing}",
            output=tmp_path / packing,
        )
        final = run_training(config)
        weights[packing] = _weights(final)
        metrics = json.loads((final.parent / "metrics.jsonl").read_text().splitlines()[0])
        losses[packing] = metrics["actor/loss"]
    assert abs(losses["true"] - losses["false"]) < 1e-6
    for key, value in weights["false"].items():
        torch.testing.assert_close(weights["true"][key], value, atol=1e-5, rtol=0, msg=key)
