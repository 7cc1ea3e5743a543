"""The part of a `RolloutBatch` that `stages.add_teacher_logprobs` reads, for tests of the
teacher stage that need no model rollout."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch


@dataclass(frozen=True)
class TeacherBatch:
    responses: list
    teacher_logp: torch.Tensor | None = None
    student_logp: torch.Tensor | None = None
    prompts: list = field(default_factory=list)
    fingerprints: list | None = None  # no inputs recorded: nothing to check

    def row_prompts(self) -> list:
        return self.prompts

    def response_token_types(self) -> None:
        return None  # single-turn rows: text responses
