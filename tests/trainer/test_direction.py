"""One real update per estimator family moves log-probs the way the rewards say.

Each test runs `train_step` on a real `TrainState` with the rewards fixed by row position
(the first half of each group's policy rows score 1, the rest 0; OraRL's annotation row
scores 1), records every row's summed log-prob just before and just after the update, and
checks the direction: rows the rewards favour go up, the others go down. The expected sign
comes from the rewards, never from the advantages the trainer computed, so a sign error
anywhere between the estimator and the loss (estimator, TaRO transform, selection, the
update's loss call, the loop's glue) fails these tests.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from videorl.models.logprobs import logprobs_in_microbatches
from videorl.trainer.build import build_state
from videorl.trainer.step import STAGES, train_step

DIRECTION = ["optim.lr=1e-4", "rollout.n=4", "data.prompts_per_step=2"]


def _position_in_group(group_ids: torch.Tensor) -> list[int]:
    seen: dict[int, int] = {}
    out = []
    for g in group_ids.tolist():
        out.append(seen.get(g, 0))
        seen[g] = out[-1] + 1
    return out


def favoured(batch) -> torch.Tensor:
    """[B] bool: the rows the fixed rewards favour (annotation rows and the first half of
    each group's policy rows)."""
    n = int((~batch.is_annotation).sum()) // len(batch.records)
    position = torch.tensor(_position_in_group(batch.group_ids))
    return batch.is_annotation | (position < n // 2)


def fixed_score(batch, config, pool=None):
    rewards = favoured(batch).float()
    components = [{"task": float(r), "format": 1.0} for r in rewards]
    return replace(batch, rewards=rewards, components=components)


def fake_teacher(
    batch, student, teacher, *, temperature, token_budget, teacher_temperature, teacher_engine
):
    """The teacher is 1 nat more likely than the student on every token of a favoured
    (verifier-correct) row and 1 nat less likely on the others: d_t = +-1."""
    mask = batch.response_mask()
    sign = favoured(batch).float() * 2 - 1
    return replace(batch, student_logp=torch.zeros_like(mask), teacher_logp=sign[:, None] * mask)


def run_one_update(state) -> dict:
    """`train_step` with fixed rewards; returns the updated batch and per-row log-probs."""
    seen = {}
    real_update = STAGES.update

    def spy(ctx, batch):
        def logp():
            values = logprobs_in_microbatches(
                ctx.policy,
                batch.row_prompts(),
                batch.responses,
                temperature=ctx.temperature,
                token_budget=ctx.optim.micro_batch_tokens,
            )
            return values.sum(1)

        seen["before"] = logp()
        metrics = real_update(ctx, batch)
        seen["after"] = logp()
        seen["batch"] = batch
        return metrics

    stages = replace(STAGES, score=fixed_score, teacher_logprobs=fake_teacher, update=spy)
    train_step(state, next(iter(state.sampler)), stages)
    seen["delta"] = seen["after"] - seen["before"]
    return seen


def _assert_direction(seen, rows: torch.Tensor, up: torch.Tensor) -> None:
    delta = seen["delta"]
    assert rows.any(), "no row to check"
    for i in torch.nonzero(rows).flatten().tolist():
        expected = "up" if up[i] else "down"
        moved = "up" if delta[i] > 0 else "down"
        assert moved == expected, (
            f"row {i} (favoured={bool(up[i])}, annotation={bool(seen['batch'].is_annotation[i])}) "
            f"log-prob went {moved} by {float(delta[i]):.3g}; deltas {delta.tolist()}"
        )


@pytest.mark.parametrize("recipe", ["grpo", "opdvr", "grpd"])
def test_outcome_and_distillation_rows_move_with_their_reward(make_config, recipe):
    config, _ = make_config(recipe, *DIRECTION)
    seen = run_one_update(build_state(config, None))
    batch = seen["batch"]
    up = favoured(batch)
    _assert_direction(seen, torch.ones_like(up), up)


def test_orarl_kept_rows_and_annotation_row_move_with_their_reward(make_config):
    """n=4, keep 3 of 5 rows per group (the annotation, one positive, one negative)."""
    config, _ = make_config(
        "orarl",
        *DIRECTION,
        "algorithm.pruning.prune_ratio=0.25",
        "algorithm.pruning.pos_quota=1",
        "algorithm.pruning.neg_quota=1",
    )
    seen = run_one_update(build_state(config, None))
    batch = seen["batch"]
    assert int(batch.is_annotation.sum()) == 2 and batch.num_rows == 6
    up = batch.rewards > 0.5  # favoured rows keep their reward through selection
    _assert_direction(seen, torch.ones_like(up), up)
    assert (seen["delta"][batch.is_annotation] > 0).all()


def test_taro_constructed_rows_move_with_their_reward(make_config):
    """Curriculum p = 0.5 at step 1: a mix of on-policy and constructed rows. Constructed
    rows with a positive advantage go up (`mask` mode zeroes their negative advantages, so
    those are not checked); on-policy rows go up or down with their reward."""
    config, _ = make_config(
        "taro",
        *DIRECTION,
        "algorithm.constructed.curriculum.warmup_steps=2",
        "reward.sensitivity.enabled=false",
    )
    state = build_state(config, None)
    state.step = 1
    seen = run_one_update(state)
    batch = seen["batch"]
    up = favoured(batch)
    off = batch.off_policy
    assert off.any() and (~off).any(), "want both constructed and on-policy rows"
    assert (off & up).any(), "want a favoured constructed row"
    _assert_direction(seen, ~off | up, up)
