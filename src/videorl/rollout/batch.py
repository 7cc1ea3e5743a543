"""`RolloutBatch`: the one typed object that carries a step's rows through every stage.

Rows belong to groups (one group per prompt). Per-prompt data (record, encoded prompt,
decoded video) is stored once and referenced by each row's `group_ids` entry, so every stage
sees the same frames (decode once, docs/methods.md#video-contract).

A multi-turn row (`rollout.tools`, docs/tools.md) also carries its trajectory: its response
is every token after the prompt (model and tool turns), its forwards take the prompt with
the vision tensors of every turn's media (`row_prompts`) and the response's token types
(`response_token_types`), and `response_mask` is 0 on its tool-turn tokens, so advantages,
losses and token counts cover the model's tokens only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import torch

from videorl.data.records import TaskRecord
from videorl.models.inputs import PromptEncoding
from videorl.reduction import MetricValue, combine
from videorl.video.decode import DecodedVideo

if TYPE_CHECKING:
    from videorl.models.fingerprint import InputFingerprint
    from videorl.rewards.calls import ToolCallMade
    from videorl.rollout.multiturn import MultiTurnRow


@dataclass(frozen=True)
class ShuffledRollouts:
    """T-GRPO's shuffled-frame responses (`trainer/tgrpo.py`): measured only, never rows of
    the batch. `groups` are the batch's video groups that got them, `group_ids[j]` is
    shuffled response j's group (an index into the batch's `records`)."""

    groups: list[int]
    group_ids: torch.Tensor
    texts: list[str]

    def renumbered(self, renumber: torch.Tensor) -> ShuffledRollouts:
        """The responses of the groups `renumber` keeps (`renumber[g]` is g's new index, -1
        for a dropped group), with their new group indices."""
        new = renumber.tolist()
        rows = [(j, new[g]) for j, g in enumerate(self.group_ids.tolist()) if new[g] >= 0]
        return ShuffledRollouts(
            groups=sorted(new[g] for g in self.groups if new[g] >= 0),
            group_ids=torch.tensor([g for _, g in rows], dtype=torch.long),
            texts=[self.texts[j] for j, _ in rows],
        )


@dataclass(frozen=True)
class RolloutBatch:
    """Rows of one step. Per-row tensors have length B; token tensors are [B, R]."""

    records: list[TaskRecord]
    prompts: list[PromptEncoding]
    videos: list[DecodedVideo | None]  # per prompt: its video, or image (T = 1); None: text
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
    # T-GRPO: the shuffled-frame responses of the batch's video groups (not rows; None: off)
    shuffled: ShuffledRollouts | None = None
    # [B] multi-turn rollouts: each row's trajectory (None: a single-turn row, e.g. OraRL's
    # annotation row); None: every row is single-turn
    trajectories: list[MultiTurnRow | None] | None = None
    # async rollouts (docs/async.md): [B] the policy version that sampled each row, and
    # [B, R] the log-probs of its tokens under those weights (None: sampled by the trainer's
    # current weights, the synchronous loop)
    versions: torch.Tensor | None = None
    behaviour_logp: torch.Tensor | None = None
    # [B] what each row's model saw at rollout (`rollout/fingerprints.py`), which the later
    # forwards check; None: `trainer.check_inputs: false`
    fingerprints: list[InputFingerprint] | None = None
    metrics: dict[str, MetricValue] = field(default_factory=dict)  # by declared reduction

    def scored_rewards(self) -> torch.Tensor:
        """`rewards`, which the score stage sets (an error before it ran)."""
        if self.rewards is None:
            raise ValueError("the batch has no rewards: it was not scored")
        return self.rewards

    def scored_components(self) -> list[dict[str, float]]:
        """`components`, which the score stage sets (an error before it ran)."""
        if self.components is None:
            raise ValueError("the batch has no reward components: it was not scored")
        return self.components

    def token_advantages(self) -> torch.Tensor:
        """`advantages`, which the advantage stage sets (an error before it ran)."""
        if self.advantages is None:
            raise ValueError("the batch has no advantages: they were not computed")
        return self.advantages

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
        """[B, R] float mask of the response tokens the model generated: right padding and a
        multi-turn row's tool-turn tokens (context only) are 0."""
        positions = torch.arange(self.max_response_len)
        mask = (positions[None, :] < self.response_lengths[:, None]).float()
        for row, trajectory in enumerate(self.trajectories or ()):
            if trajectory is not None:
                mask[row, : trajectory.loss_mask.numel()] *= trajectory.loss_mask
        return mask

    def response_turns(self) -> torch.Tensor:
        """[B, R] long: the 1-based model turn of each response token (every token of a
        single-turn row is turn 1; `MultiTurnRow.token_turns`)."""
        turns = torch.ones(self.num_rows, self.max_response_len, dtype=torch.long)
        for row, trajectory in enumerate(self.trajectories or ()):
            if trajectory is not None and trajectory.loss_mask.numel():
                found = trajectory.token_turns()
                turns[row, : found.numel()] = found
                turns[row, found.numel() :] = found[-1]
        return turns

    def row_records(self) -> list[TaskRecord]:
        return [self.records[int(g)] for g in self.group_ids]

    def row_prompts(self) -> list[PromptEncoding]:
        """Each row's prompt as its forwards take it: its group's, or for a multi-turn row
        the prompt with the vision tensors of every turn's media (`loss_prompt`)."""
        prompts = [self.prompts[int(g)] for g in self.group_ids]
        if self.trajectories is None:
            return prompts
        return [
            prompt if trajectory is None else trajectory.loss_prompt()
            for prompt, trajectory in zip(prompts, self.trajectories, strict=True)
        ]

    def response_token_types(self) -> list[torch.Tensor] | None:
        """Each response's token types when the batch has multi-turn rows (their tool turns
        hold image and video tokens; a single-turn row's are text, 0), else None."""
        if self.trajectories is None:
            return None
        return [
            torch.zeros_like(response, dtype=torch.int32)
            if trajectory is None
            else trajectory.response_token_types
            for response, trajectory in zip(self.responses, self.trajectories, strict=True)
        ]

    def row_calls(self) -> list[tuple[ToolCallMade, ...]] | None:
        """Each row's tool calls (what reward plug-ins receive), or None without tools."""
        if self.trajectories is None:
            return None
        return [() if t is None else t.calls_made() for t in self.trajectories]

    def with_metrics(self, **metrics: MetricValue) -> RolloutBatch:
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
            versions=rows_of(self.versions),
            behaviour_logp=rows_of(self.behaviour_logp),
            trajectories=None
            if self.trajectories is None
            else [self.trajectories[i] for i in index],
            fingerprints=None
            if self.fingerprints is None
            else [self.fingerprints[i] for i in index],
        )

    @property
    def num_groups(self) -> int:
        """Prompts (groups) the batch refers to, kept rows or not."""
        return len(self.records)

    def take_groups(self, groups: list[int]) -> RolloutBatch:
        """Only the rows of `groups` (in that order), with the per-prompt data compacted so
        that group `groups[k]` becomes group k."""
        renumber = torch.full((self.num_groups,), -1, dtype=torch.long)
        renumber[torch.tensor(groups, dtype=torch.long)] = torch.arange(len(groups))
        rank = renumber[self.group_ids]
        rows = torch.nonzero(rank >= 0).flatten()
        rows = rows[torch.argsort(rank[rows], stable=True)]
        picked = self.subset(rows)
        return replace(
            picked,
            records=[self.records[g] for g in groups],
            prompts=[self.prompts[g] for g in groups],
            videos=[self.videos[g] for g in groups],
            group_ids=renumber[picked.group_ids],
            shuffled=None if self.shuffled is None else self.shuffled.renumbered(renumber),
        )


def concat_batches(batches: list[RolloutBatch]) -> RolloutBatch:
    """One batch of the rows of `batches`, in order; each batch's group ids are offset by
    the groups before it. Token tensors are right-padded to the longest response. Metrics
    are combined over every row (`merge_metrics`)."""
    if len(batches) == 1:
        return batches[0]
    offsets, total = [], 0
    for b in batches:
        offsets.append(total)
        total += b.num_groups
    first = batches[0]

    def cat_rows(name: str) -> torch.Tensor | None:
        parts = [getattr(b, name) for b in batches]
        if any(p is None for p in parts):
            return None
        if parts[0].dim() == 2:
            width = max(p.shape[1] for p in parts)
            parts = [torch.nn.functional.pad(p, (0, width - p.shape[1])) for p in parts]
        return torch.cat(parts)

    components = [b.components for b in batches if b.components is not None]
    shuffled = [
        (b.shuffled, o) for b, o in zip(batches, offsets, strict=True) if b.shuffled is not None
    ]
    return replace(
        first,
        records=[r for b in batches for r in b.records],
        prompts=[p for b in batches for p in b.prompts],
        videos=[v for b in batches for v in b.videos],
        group_ids=torch.cat([b.group_ids + o for b, o in zip(batches, offsets, strict=True)]),
        responses=[r for b in batches for r in b.responses],
        texts=[t for b in batches for t in b.texts],
        is_annotation=torch.cat([b.is_annotation for b in batches]),
        off_policy=torch.cat([b.off_policy for b in batches]),
        truncated=torch.cat([b.truncated for b in batches]),
        rewards=cat_rows("rewards"),
        components=[c for part in components for c in part]
        if len(components) == len(batches)
        else None,
        advantages=cat_rows("advantages"),
        teacher_logp=cat_rows("teacher_logp"),
        student_logp=cat_rows("student_logp"),
        versions=cat_rows("versions"),
        behaviour_logp=cat_rows("behaviour_logp"),
        shuffled=ShuffledRollouts(
            groups=[g + o for part, o in shuffled for g in part.groups],
            group_ids=torch.cat([part.group_ids + o for part, o in shuffled]),
            texts=[t for part, _ in shuffled for t in part.texts],
        )
        if shuffled
        else None,
        trajectories=_concat_trajectories(batches),
        fingerprints=None
        if any(b.fingerprints is None and b.num_rows for b in batches)
        else [f for b in batches for f in b.fingerprints or ()],
        metrics=merge_metrics([(b.metrics, b.num_rows) for b in batches]),
    )


def _concat_trajectories(batches: Sequence[RolloutBatch]) -> list[MultiTurnRow | None] | None:
    """The rows' trajectories in order (None for single-turn rows), or None when no batch
    has any."""
    if all(b.trajectories is None for b in batches):
        return None
    return [t for b in batches for t in (b.trajectories or [None] * b.num_rows)]


def merge_metrics(
    parts: list[tuple[dict[str, MetricValue], int]],
) -> dict[str, MetricValue]:
    """The metrics of several batches as one, each by its declared reduction
    (`videorl.reduction.combine`): a summed count or time adds up, a maximum is the largest,
    a plain number is the mean weighted by each batch's rows (over the batches that report
    it)."""
    merged: dict[str, MetricValue] = {}
    for key in dict.fromkeys(k for metrics, _ in parts for k in metrics):
        merged[key] = combine([(m[key], rows) for m, rows in parts if key in m])
    return merged


def pad_rows(rows: list[torch.Tensor], length: int, value: float = 0.0) -> torch.Tensor:
    """Stack 1-D tensors into [B, length], right-padded with `value`."""
    out = torch.full((len(rows), length), value, dtype=torch.float32)
    for i, row in enumerate(rows):
        out[i, : row.numel()] = row[:length]
    return out
