"""A step with shared prefill, reused vision embeddings and shared prompt forwards equals the
old path, and encodes each distinct video (original or frame-shuffled) exactly once."""

from __future__ import annotations

import pytest
import torch

from videorl.trainer.build import build_state
from videorl.trainer.step import train_step

COMPARED = ("actor/loss", "reward/mean", "sensitivity/d_mean", "response/length_mean")


def _one_step(config):
    state = build_state(config, None)
    indices = next(iter(state.sampler))
    items = [0]

    def hook(_module, _args, kwargs):
        items[0] += int(kwargs["grid_thw"].shape[0])

    handle = state.policy.model.model.visual.register_forward_pre_hook(hook, with_kwargs=True)
    metrics = train_step(state, indices)
    handle.remove()
    weights = {k: v.detach().clone() for k, v in state.policy.model.named_parameters()}
    return metrics, items[0], weights, state


def test_fast_step_equals_old_step_and_encodes_each_video_once(make_config, tmp_path):
    extra = ("trainer.steps=1", "optim.mini_batches=2", "optim.lr=1e-3")  # old log-probs too
    fast, _ = make_config("taro", *extra, output=tmp_path / "fast")
    old, _ = make_config(
        "taro",
        *extra,
        "rollout.share_prefill=false",
        "model.reuse_visual_embeddings=false",
        "model.share_prompt_forward=false",
        output=tmp_path / "old",
    )
    new_metrics, new_items, new_weights, state = _one_step(fast)
    old_metrics, old_items, old_weights, _ = _one_step(old)
    prompts = int(fast.data.prompts_per_step)
    shuffled = prompts * fast.rollout.n  # every temporal-grounding row gets its own shuffle
    assert new_items == prompts + shuffled  # 1 encoding per distinct video per step
    assert old_items > 2 * new_items
    assert len(state.policy.visual_cache) == 0  # held for one step only
    for key in COMPARED:
        assert new_metrics[key] == pytest.approx(old_metrics[key], abs=1e-5, nan_ok=True), key
    for key, value in old_weights.items():
        torch.testing.assert_close(new_weights[key], value, atol=1e-5, rtol=0, msg=key)
