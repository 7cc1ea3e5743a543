"""`algorithm.distill.teacher_engine: hf | vllm`: where the teacher's log-probs come from.

OPDVR scores the student's tokens with a vLLM engine of the teacher (prompt log-probs of
prompt + response); `vllm` does the same (`VLLMEngine.token_logprobs`, parity-tested against
the HF teacher in tests/vllm/test_parity.py), `hf` (the default) with an HF forward.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

from tests.trainer.teacher_batch import TeacherBatch
from videorl.algorithms.distill import DistillConfig
from videorl.config import load_config
from videorl.errors import ConfigError
from videorl.trainer import build, stages

# Called on stand-ins: a TeacherBatch for the batch, names for the models (the scorer is faked).
add_teacher_logprobs: Callable[..., Any] = stages.add_teacher_logprobs


def test_default_is_hf_and_vllm_is_a_value():
    assert DistillConfig().teacher_engine == "hf"
    assert DistillConfig(teacher_engine="vllm").teacher_engine == "vllm"
    config = load_config(None, ["algorithm.distill.teacher_engine=vllm"])
    assert config.algorithm.distill.teacher_engine == "vllm"


def test_unknown_engine_is_refused():
    with pytest.raises(ConfigError, match="teacher_engine"):
        load_config(None, ["algorithm.distill.teacher_engine=sglang"])
    with pytest.raises(ConfigError, match="teacher_engine='sglang' must be hf or vllm"):
        DistillConfig(teacher_engine="sglang")  # type: ignore[arg-type]


def test_vllm_teacher_refuses_another_temperature():
    """vLLM's prompt log-probs are log softmax of the raw logits: no temperature applies."""
    with pytest.raises(ConfigError, match="teacher_engine=vllm.*teacher_engine=hf"):
        DistillConfig(teacher_engine="vllm", teacher_temperature=0.7)
    DistillConfig(teacher_engine="hf", teacher_temperature=0.7)


class _Scorer:
    """A teacher engine that returns -0.5 per token and records what it was asked."""

    def __init__(self) -> None:
        self.calls: list[tuple[list, list]] = []

    def token_logprobs(self, prompts, responses):
        self.calls.append((list(prompts), list(responses)))
        return [torch.full((int(r.numel()),), -0.5) for r in responses]


def test_teacher_engine_scores_the_rows_and_pads_them(monkeypatch):
    """With an engine the teacher's log-probs are its per-row scores, zero-padded to [B, R];
    the HF teacher is not run, the student still is (at the rollout temperature)."""
    seen = []

    def student_only(loaded, prompts, responses, *, temperature, token_budget, **_):
        seen.append(loaded)
        return torch.zeros(len(responses), max(int(r.numel()) for r in responses))

    monkeypatch.setattr(stages, "logprobs_in_microbatches", student_only)
    responses = [torch.tensor([4, 5, 6]), torch.tensor([7]), torch.tensor([], dtype=torch.long)]
    scorer = _Scorer()
    batch = TeacherBatch(responses=responses, prompts=["a", "b", "c"])
    out = add_teacher_logprobs(
        batch, "student", "teacher", temperature=1.0, token_budget=64, teacher_engine=scorer
    )
    assert seen == ["student"]
    assert scorer.calls == [(["a", "b", "c"], responses)]
    assert out.teacher_logp.tolist() == [[-0.5, -0.5, -0.5], [-0.5, 0.0, 0.0], [0.0, 0.0, 0.0]]


def test_teacher_engine_is_built_only_for_vllm(monkeypatch):
    built = []
    monkeypatch.setattr(build, "build_vllm_teacher", lambda cfg, teacher, info: built.append(1))
    monkeypatch.setattr(build, "rollout_engine", lambda engine, path, key: engine)
    hf = load_config(None, ["algorithm.estimator=opdvr", "model.teacher_path=t"])
    assert build._teacher_engine(hf, "teacher", None) is None  # type: ignore[arg-type]
    vllm = load_config(
        None,
        [
            "algorithm.estimator=opdvr",
            "model.teacher_path=t",
            "algorithm.distill.teacher_engine=vllm",
        ],
    )
    build._teacher_engine(vllm, "teacher", None)  # type: ignore[arg-type]
    assert built == [1]
    assert build._teacher_engine(vllm, None, None) is None  # type: ignore[arg-type]  # returns before reading dist; no teacher, no engine
