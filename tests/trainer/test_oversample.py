"""`rollout.oversample` (trainer/oversample.py): rounds stop at the quota, take the groups
that ended (carried ones first), carry the rest, repeat, and resume exactly."""

from __future__ import annotations

import shutil

import pytest
import torch

from tests.trainer.runs import assert_same_checkpoint, metrics_by_step, with_output
from videorl.config import load_config
from videorl.errors import ConfigError
from videorl.models.generate import QuotaCriterion, RoundQuota
from videorl.trainer.loop import run_training

ONE_THREAD = ["trainer.cpu_threads=1", "rollout.worker_threads=1"]
OVERSAMPLED = ["rollout.mode=async", "rollout.oversample=2", *ONE_THREAD]
TIMED = (
    "time/",
    "perf/",
    "async/trainer_idle",
    "async/rollout_idle",
    "async/worker_",
    "async/queue",
)
EOS = 9


def _untimed(row: dict) -> dict:
    return {k: v for k, v in row.items() if not k.startswith(TIMED) and "seconds" not in k}


def _stops(quota: RoundQuota, new_tokens: list[list[int]]) -> bool:
    prompt = torch.zeros(len(new_tokens), 3, dtype=torch.long)
    ids = torch.cat([prompt, torch.tensor(new_tokens)], dim=1)
    return bool(QuotaCriterion(quota, prompt_len=3, eos=[EOS])(ids, None).all())


def test_quota_waits_for_the_needed_groups_and_every_carried_one():
    # rows 0-1: group 0 (carried), rows 2-3: group 1, row 4: group 2
    quota = RoundQuota(need=1, must=(0,), row_groups=(0, 0, 1, 1, 2), row_budgets=(4,) * 5)
    ended_1 = [[1, 1], [1, 1], [1, EOS], [EOS, 1], [1, 1]]  # group 1 ended, carried one not
    assert not _stops(quota, ended_1)
    both = [[EOS, 1], [1, EOS], [1, EOS], [EOS, 1], [1, 1]]
    assert _stops(quota, both)
    # a row at its own budget has ended too (a continued row's budget is what is left)
    short = RoundQuota(need=1, must=(), row_groups=(0, 1), row_budgets=(2, 8))
    assert _stops(short, [[1, 1], [1, 1]]) and not _stops(short, [[1], [1]])


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["rollout.oversample=2"], "rollout.mode=sync"),
        ([*OVERSAMPLED, "rollout.workers=2"], "rollout.workers=2"),
        ([*OVERSAMPLED, "rollout.partial=continue", "rollout.max_staleness=0"], "max_staleness"),
        (["rollout.partial=continue"], "rollout.oversample=1"),
    ],
)
def test_refusals_name_the_key(overrides, message):
    from videorl.api import resolve_config_path

    with pytest.raises(ConfigError, match=message):
        load_config(resolve_config_path("quickstart"), overrides)


slow = pytest.mark.slow  # the runs below spawn rollout workers


@slow
def test_restart_rounds_train_the_step_groups_and_repeat(make_config, tmp_path):
    steps = ["trainer.steps=3", "rollout.max_staleness=1", *OVERSAMPLED]
    runs = []
    for name in ("a", "b"):
        config, _ = make_config("grpo", *steps, output=tmp_path / name)
        run_training(config)
        runs.append(metrics_by_step(tmp_path / name))
    first, second = runs
    for step in (1, 2, 3):
        assert len(first[step]["batch_ids"]) == config.data.prompts_per_step
        assert _untimed(first[step]) == _untimed(second[step]), f"step {step} differs"
        assert first[step]["async/staleness_max"] <= 1
    assert sum(first[s]["async/cut_groups"] for s in (1, 2, 3)) > 0


@slow
def test_continue_keeps_carried_tokens_within_the_bound(make_config, tmp_path):
    steps = ["trainer.steps=3", "rollout.max_staleness=2", "rollout.partial=continue"]
    config, _ = make_config("grpo", *steps, *OVERSAMPLED, output=tmp_path / "run")
    run_training(config)
    rows = metrics_by_step(tmp_path / "run")
    assert all(rows[s]["async/staleness_max"] <= 2 for s in (1, 2, 3))
    assert sum(rows[s]["async/carried_taken"] for s in (1, 2, 3)) > 0
    assert all(len(rows[s]["batch_ids"]) == config.data.prompts_per_step for s in (1, 2, 3))


@slow
@pytest.mark.parametrize("partial", ["restart", "continue"])
def test_resume_keeps_the_carry(make_config, tmp_path, partial):
    """A run resumed from step 2's checkpoint ends as the uninterrupted one: the checkpoint
    holds the groups the round before step 3 cut, so the resumed rounds are the same."""
    steps = [
        "trainer.steps=4",
        "trainer.save_every=1",
        "trainer.keep_last=10",
        "rollout.max_staleness=2",
        f"rollout.partial={partial}",
        *OVERSAMPLED,
    ]
    config, _ = make_config("grpo", *steps, output=tmp_path / "reference")
    run_training(config)
    out = tmp_path / "resumed"
    out.mkdir()
    shutil.copytree(tmp_path / "reference" / "step-000002", out / "step-000002")
    run_training(with_output(config, out), resume="auto")
    got, expected = metrics_by_step(out), metrics_by_step(tmp_path / "reference")
    for step in (3, 4):
        assert got[step]["batch_ids"] == expected[step]["batch_ids"]
        assert _untimed(got[step]) == _untimed(expected[step]), f"step {step} differs"
    assert_same_checkpoint(out / "step-000004", tmp_path / "reference" / "step-000004")
