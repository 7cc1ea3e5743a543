"""The update's old log-probs: only the rows that need a separate pass get one."""

from __future__ import annotations

import pytest
import torch

from tests.trainer.dist_update_worker import fixed_batch
from videorl.algorithms.loss import PolicyLossConfig
from videorl.config import OptimConfig
from videorl.models.loading import load_model
from videorl.trainer import update as update_module
from videorl.trainer.update import UpdateContext, update_policy


@pytest.mark.parametrize(
    ("mini_batches", "epochs", "recomputed"),
    [(1, 1, []), (2, 1, [4]), (4, 1, [6]), (2, 2, [8])],
)
def test_old_logprobs_only_for_rows_updated_after_a_step(
    tiny_model_dir, monkeypatch, mini_batches, epochs, recomputed
):
    """With one epoch the first mini-batch's old log-probs come from its own forward (no step
    has happened yet); with two epochs every row needs them before the first step."""
    torch.manual_seed(0)
    loaded = load_model(tiny_model_dir("qwen2_5_vl"))
    batch = fixed_batch(loaded)  # 8 rows
    calls: list[int] = []
    real = update_module.logprobs_in_microbatches

    def counting(model, prompts, responses, **kwargs):
        calls.append(len(responses))
        return real(model, prompts, responses, **kwargs)

    monkeypatch.setattr(update_module, "logprobs_in_microbatches", counting)
    ctx = UpdateContext(
        policy=loaded,
        optimizer=torch.optim.AdamW(loaded.model.parameters(), lr=1e-3),
        optim=OptimConfig(lr=1e-3, mini_batches=mini_batches, epochs=epochs),
        loss=PolicyLossConfig(),
        temperature=1.0,
    )
    metrics = update_policy(ctx, batch)
    assert calls == recomputed
    assert metrics["actor/skipped_nonfinite_steps"] == 0
    assert torch.isfinite(torch.tensor(metrics["actor/loss"]))
