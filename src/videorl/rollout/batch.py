"""`RolloutBatch`: the one typed object that carries a step's rows through every stage.

Rows belong to groups (one group per prompt). Per-prompt data (record, encoded prompt,
decoded video) is stored once and referenced by each row's `group_ids` entry, so every stage
sees the same frames (decode once, METHODS.md section 4).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import torch

from videorl.data.records import TaskRecord
from videorl.models.inputs import PromptEncoding


@dataclass(frozen=True)
class RolloutBatch:
    """Rows of one step. Per-row tensors have length B; token tensors are [B, R]."""

    records: list[TaskRecord]
    prompts: list[PromptEncoding]
    videos: list[Any]
    group_ids: torch.Tensor  # [B] long: index into records / prompts / videos
    responses: list[torch.Tensor]  # [B] response token ids (EOS kept)
    texts: list[str]  # [B] decoded responses
    is_annotation: torch.Tensor  # [B] bool (OraRL)
    off_policy: torch.Tensor  # [B] bool (TaRO constructed rows)
    truncated: torch.Tensor  # [B] bool: no EOS within the budget
    rewards: torch.Tensor | None = None  # [B]
    components: list[dict[str, float]] | None = None  # [B] reward components
    advantages: torch.Tensor | None = None  # [B, R] token advantages
    teacher_logp: torch.Tensor | None = None  # [B, R]
    student_logp: torch.Tensor | None = None  # [B, R]
    metrics: dict[str, float] = field(default_factory=dict)

    @property
    def num_rows(self) -> int:
        return len(self.responses)

    @property
    def response_lengths(self) -> torch.Tensor:
        return torch.tensor([int(r.numel()) for r in self.responses], dtype=torch.long)

    @property
    def max_response_len(self) -> int:
        return int(self.response_lengths.max()) if self.responses else 0

    def response_mask(self) -> torch.Tensor:
        """[B, R] float mask of real response tokens (right padding is 0)."""
        positions = torch.arange(self.max_response_len)
        return (positions[None, :] < self.response_lengths[:, None]).float()

    def row_records(self) -> list[TaskRecord]:
        return [self.records[int(g)] for g in self.group_ids]

    def row_prompts(self) -> list[PromptEncoding]:
        return [self.prompts[int(g)] for g in self.group_ids]

    def with_metrics(self, **metrics: float) -> RolloutBatch:
        return replace(self, metrics={**self.metrics, **metrics})

    def subset(self, rows: torch.Tensor) -> RolloutBatch:
        """The rows at integer indices `rows` (per-prompt data is shared, not copied)."""
        index = rows.tolist()
        length = max((int(self.responses[i].numel()) for i in index), default=0)

        def rows_of(t: torch.Tensor | None) -> torch.Tensor | None:
            if t is None:
                return None
            picked = t[rows]
            return picked[:, :length] if picked.dim() == 2 else picked

        return replace(
            self,
            group_ids=self.group_ids[rows],
            responses=[self.responses[i] for i in index],
            texts=[self.texts[i] for i in index],
            is_annotation=self.is_annotation[rows],
            off_policy=self.off_policy[rows],
            truncated=self.truncated[rows],
            rewards=rows_of(self.rewards),
            components=None if self.components is None else [self.components[i] for i in index],
            advantages=rows_of(self.advantages),
            teacher_logp=rows_of(self.teacher_logp),
            student_logp=rows_of(self.student_logp),
        )


def pad_rows(rows: list[torch.Tensor], length: int, value: float = 0.0) -> torch.Tensor:
    """Stack 1-D tensors into [B, length], right-padded with `value`."""
    out = torch.full((len(rows), length), value, dtype=torch.float32)
    for i, row in enumerate(rows):
        out[i, : row.numel()] = row[:length]
    return out


def empty_batch() -> RolloutBatch:
    """A batch without rows (a rank whose samples were all skipped still joins collectives)."""
    none = torch.zeros(0, dtype=torch.bool)
    return RolloutBatch(
        records=[],
        prompts=[],
        videos=[],
        group_ids=torch.zeros(0, dtype=torch.long),
        responses=[],
        texts=[],
        is_annotation=none,
        off_policy=none,
        truncated=none,
        rewards=torch.zeros(0),
        advantages=torch.zeros(0, 0),
    )
