"""`algorithm.distill.teacher_temperature`: the teacher's log-probs have a temperature of
their own, apart from the rollout temperature the student's use (issue 31, item 7b).

Published: LeapLabTHU/OPDVR `opdvr.sh` line 38 `TEACHER_TEMPERATURE=${TEACHER_TEMPERATURE:-1.0}`
(line 37 `TEMPERATURE=${TEMPERATURE:-1.0}`, the student's sampling temperature), passed to
its verl fork as `+actor_rollout_ref.rollout.teacher_temperature` (line 130); `grpd.sh` alike.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

from tests.trainer.teacher_batch import TeacherBatch
from videorl.algorithms.distill import DistillConfig
from videorl.api import resolve_config_path
from videorl.config import load_config
from videorl.errors import ConfigError
from videorl.trainer import stages

# Called on stand-ins: a TeacherBatch for the batch, names for the models (the scorer is faked).
add_teacher_logprobs: Callable[..., Any] = stages.add_teacher_logprobs


def test_default_is_opdvrs_teacher_temperature():
    assert DistillConfig().teacher_temperature == 1.0  # opdvr.sh:38, grpd.sh:38
    for recipe in ("opdvr", "grpd"):
        config = load_config(resolve_config_path(recipe))
        assert config.algorithm.distill.teacher_temperature == 1.0
        assert config.rollout.temperature == 1.0  # opdvr.sh:37 TEMPERATURE


@pytest.mark.parametrize("bad", ["0", "-1", "inf"])
def test_teacher_temperature_must_be_positive(bad):
    with pytest.raises(ConfigError, match="algorithm.distill.teacher_temperature"):
        load_config(None, [f"algorithm.distill.teacher_temperature={bad}"])


def test_teacher_scores_at_its_temperature_the_student_at_the_rollouts(monkeypatch):
    """Worked example: one response token with logits (2, 0) under both models. Student at the
    rollout temperature 1: log softmax = 2 - log(e^2 + 1) = -0.12693; teacher at 2: logits
    (1, 0), 1 - log(e + 1) = -0.31326. The log-ratio d_t is the teacher's minus the student's."""
    logits = torch.tensor([2.0, 0.0])

    def fake_logprobs(loaded, prompts, responses, *, temperature, token_budget, **_):
        logp = torch.log_softmax(logits / temperature, dim=-1)[0]
        return torch.full((len(responses), 1), float(logp))

    monkeypatch.setattr(stages, "logprobs_in_microbatches", fake_logprobs)
    batch = TeacherBatch(responses=[torch.tensor([0])], prompts=["p"])
    out = add_teacher_logprobs(
        batch, "student", "teacher", temperature=1.0, token_budget=64, teacher_temperature=2.0
    )
    assert float(out.student_logp[0, 0]) == pytest.approx(-0.126928, abs=1e-6)
    assert float(out.teacher_logp[0, 0]) == pytest.approx(-0.313262, abs=1e-6)
    same = add_teacher_logprobs(batch, "student", "teacher", temperature=1.0, token_budget=64)
    assert float(same.teacher_logp[0, 0]) == pytest.approx(-0.126928, abs=1e-6)  # default 1.0
