"""DAPO dynamic sampling in the step, on the tiny model (verl recipe/dapo/src/
dapo_ray_trainer.py at 4f80e46, `RayDAPOTrainer.fit`): zero-variance groups are dropped, the
step refills from the sampler's next batches until it has `data.prompts_per_step` groups
(cut in draw order), the cap is honoured, a 3-step run trains with it (and `videorl train
--dry-run` plans it), and resume equals the uninterrupted run."""

from __future__ import annotations

import contextlib
import functools
import io
import shutil
from dataclasses import replace
from types import SimpleNamespace
from typing import Self

import pytest
import torch

from tests.cli_runner import run_cli
from tests.trainer.runs import assert_same_checkpoint, metrics_by_step, with_output
from videorl.algorithms.dynamic_sampling import DynamicSamplingConfig
from videorl.data.loaders import load_records
from videorl.data.sampler import TaskGroupedSampler
from videorl.errors import DataError
from videorl.reduction import logged
from videorl.trainer.build import build_state
from videorl.trainer.loop import LoopHooks, run_training
from videorl.trainer.stages import add_length_rewards
from videorl.trainer.step import STAGES, train_step

# the DAPO shape of tests/trainer/test_dapo_gspo.py (clip-higher, token-mean, overlong
# shaping in a 16-token budget) with dynamic sampling on DAPO's `acc` (our `task`)
DAPO = [
    "algorithm.loss.clip_low=0.2",
    "algorithm.loss.clip_high=0.28",
    "algorithm.loss.aggregation=token-mean",
    "reward.overlong.enabled=true",
    "reward.overlong.buffer_len=8",
    "algorithm.dynamic_sampling.enabled=true",
    "algorithm.dynamic_sampling.metric=task",
]


def flat_for(flat_ids: set[str]):
    """A `score` whose `task` (and reward) is 0.5 on every row of a record in `flat_ids`
    (a zero-variance group) and the row's position in its group otherwise (varied)."""
    real = STAGES.score

    def patched(batch, config, pool=None):
        batch = real(batch, config, pool)
        n = int((batch.group_ids == batch.group_ids[0]).sum())
        values = [
            0.5 if batch.records[g].id in flat_ids else (row % n) / n
            for row, g in enumerate(batch.group_ids.tolist())
        ]
        components = [{**c, "task": v} for c, v in zip(batch.components, values, strict=True)]
        return replace(batch, rewards=torch.tensor(values), components=components)

    return patched


def shadow(state) -> TaskGroupedSampler:
    """A copy of the run's sampler at its position: predicts the next draws."""
    copy = TaskGroupedSampler(state.records, state.cfg.data.prompts_per_step, seed=0)
    copy.load_state_dict(state.sampler.state_dict())
    return copy


def ids(state, indices: list[int]) -> list[str]:
    return [state.records[i].id for i in indices]


@pytest.fixture(scope="module")
def state(build_config, tmp_path_factory):
    config, _ = build_config("grpo", tmp_path_factory.mktemp("ds") / "run", *DAPO)
    return build_state(config, None)


def _step(state, flat: set[str], score=None, **sampling):
    """One step with `sampling` replacing DAPO's dynamic sampling settings, scored by
    `flat_for(flat)` (or `score`); its metrics as the loop logs them, with its batch ids."""
    ds = replace(DynamicSamplingConfig(enabled=True, metric="task"), **sampling)
    state.cfg = replace(state.cfg, algorithm=replace(state.cfg.algorithm, dynamic_sampling=ds))
    stages = replace(STAGES, score=score or flat_for(flat))
    result = train_step(state, state.sampler.next_batch(), stages)
    return {**logged(result.metrics), "batch_ids": result.batch_ids}


def test_a_flat_first_draw_is_refilled_from_the_next_batch(state):
    upcoming = shadow(state)
    first, second = ids(state, upcoming.next_batch()), ids(state, upcoming.next_batch())
    drawn, flat = [], flat_for(set(first))

    def recording(batch, config, pool=None):  # each draw's rewards after the length terms
        batch = flat(batch, config, pool)
        budget = state.cfg.rollout.max_new_tokens
        drawn.append(add_length_rewards(batch, config, max_new_tokens=budget))
        return batch

    metrics = _step(state, set(first), score=recording)
    assert metrics["batch_ids"] == second  # trained on the refill only
    assert metrics["dynamic_sampling/draws"] == 2 and metrics["dynamic_sampling/capped"] == 0
    assert metrics["dynamic_sampling/kept_groups"] == 2
    assert metrics["dynamic_sampling/dropped_groups"] == 2
    assert metrics["rows/total"] == 2 * 4 and "actor/loss" in metrics
    # every row drawn (2 draws x 8) counts in drawn_reward_mean, the kept 8 in reward/mean
    rewards = [b.rewards for b in drawn]
    assert [r.numel() for r in rewards] == [8, 8]
    assert metrics["dynamic_sampling/drawn_reward_mean"] == pytest.approx(
        float(torch.cat(rewards).mean())  # type: ignore[arg-type]  # drawn batches are scored
    )
    assert metrics["reward/mean"] == pytest.approx(float(rewards[1].mean()))
    assert state.sampler.state_dict() == upcoming.state_dict()  # both batches consumed


def test_the_step_keeps_exactly_its_groups_in_draw_order(state):
    upcoming = shadow(state)
    first, second = ids(state, upcoming.next_batch()), ids(state, upcoming.next_batch())
    metrics = _step(state, {first[0]})
    # draw 1 keeps first[1]; draw 2 adds both of its groups; cut to 2: its first one
    assert metrics["batch_ids"] == [first[1], second[0]]
    assert metrics["dynamic_sampling/draws"] == 2
    assert metrics["dynamic_sampling/dropped_groups"] == 1
    assert metrics["dynamic_sampling/kept_groups"] == 2 and metrics["rows/total"] == 8


def test_a_draw_of_several_batches_needs_no_refill(state):
    upcoming = shadow(state)
    first, second = ids(state, upcoming.next_batch()), ids(state, upcoming.next_batch())
    metrics = _step(state, set(first), batches_per_draw=2)
    assert metrics["batch_ids"] == second and metrics["dynamic_sampling/draws"] == 1
    assert state.sampler.state_dict() == upcoming.state_dict()


def test_the_cap_is_honoured(state):
    everything = {r.id for r in state.records}
    upcoming = shadow(state)
    for _ in range(2):
        upcoming.next_batch()
    metrics = _step(state, everything, max_draws=2, on_cap="train")
    assert metrics["dynamic_sampling/draws"] == 2 and metrics["dynamic_sampling/capped"] == 1
    assert metrics["dynamic_sampling/kept_groups"] == 0 and metrics["step/skipped"] == 1
    assert metrics["dynamic_sampling/dropped_groups"] == 4
    assert state.sampler.state_dict() == upcoming.state_dict()
    with pytest.raises(DataError, match="kept 0 of 2 groups after algorithm.dynamic_sampling"):
        _step(state, everything, max_draws=1)  # DAPO's default: stop the run
    with pytest.raises(DataError, match=r"metric='tiou' is not a reward component .*task"):
        _step(state, set(), metric="tiou")


@pytest.fixture(scope="module")
def runs(build_config, tmp_path_factory):
    """3 DAPO steps whose step-2 batch is flat (so it refills), then the same run resumed
    from its step-1 checkpoint; both score through the step's `stages`, passed as hooks.
    Also `videorl train --dry-run`'s plan of that config."""
    root = tmp_path_factory.mktemp("ds_runs")
    steps = ["trainer.steps=3", "trainer.save_every=1", "trainer.keep_last=10"]
    config, overrides = build_config("grpo", root / "reference", *DAPO, *steps)
    records = load_records(config.data.train).records
    second = TaskGroupedSampler(records, 2, seed=0).epoch_batches(0)[1]
    stages = replace(STAGES, score=flat_for({records[i].id for i in second}))
    hooks = LoopHooks(step=functools.partial(train_step, stages=stages))
    run_training(config, hooks=hooks)
    with pytest.MonkeyPatch.context() as patch, _Capture() as capture:
        plan = run_cli(capture, patch, "train", "quickstart", *overrides, "--dry-run")
    out = root / "resumed"
    out.mkdir()
    shutil.copytree(root / "reference" / "step-000001", out / "step-000001")
    run_training(with_output(config, out), resume="auto", hooks=hooks)
    return plan, root / "reference", out


class _Capture:
    """capsys for a module-scoped fixture (`run_cli` reads it): stdout and stderr go to a
    buffer inside `with capture:`."""

    def __init__(self) -> None:
        self.buffer = io.StringIO()
        self._redirects = contextlib.ExitStack()

    def __enter__(self) -> Self:
        self._redirects.enter_context(contextlib.redirect_stdout(self.buffer))
        self._redirects.enter_context(contextlib.redirect_stderr(self.buffer))
        return self

    def __exit__(self, *exc) -> None:
        self._redirects.close()

    def readouterr(self) -> SimpleNamespace:
        text = self.buffer.getvalue()
        self.buffer.seek(0), self.buffer.truncate()
        return SimpleNamespace(out=text, err="")


def test_three_dapo_steps_refill_the_flat_batch(runs):
    plan, reference, _ = runs
    rows = metrics_by_step(reference)
    assert sorted(rows) == [1, 2, 3]
    assert [rows[s]["dynamic_sampling/draws"] for s in (1, 2, 3)] == [1, 2, 1]
    for row in rows.values():
        assert row["dynamic_sampling/kept_groups"] == 2 and row["dynamic_sampling/capped"] == 0
        assert len(row["batch_ids"]) == 2 and "actor/loss" in row
    assert plan.code == 0 and "dynamic sampling" in plan.output


def test_resume_with_dynamic_sampling_equals_the_uninterrupted_run(runs):
    _, reference, out = runs
    got, expected = metrics_by_step(out), metrics_by_step(reference)
    for step in (2, 3):
        for key in ("batch_ids", "lr", "actor/loss", "dynamic_sampling/draws"):
            assert got[step][key] == expected[step][key], f"step {step} {key}"
    assert_same_checkpoint(out / "step-000003", reference / "step-000003")
