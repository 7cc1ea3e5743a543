"""Sub-agent rows in the update (`rollout.include_subagent_in_loss: true`,
docs/tools.md#sub-agents).

Each sub-agent trajectory of a main row (`MultiTurnRow.subagents`, `rollout/subagents.py`)
becomes one more row of the step's batch, after the advantages: its prompt is the
sub-agent's own context (the frames and the summary prompt: context, as every prompt is),
its response the tokens it wrote (loss mask 1), and every one of them takes the advantage
of the main row's turn t that made the call, A_{i,t} (the row's A under GRPO; its turn's
under `algorithm.turn_rewards`), as ParaVT's `HierarchicalPPOActor` broadcasts the main
trajectory's advantage to its sub-agents. Rewards and group statistics never see these rows:
they are added after both. Its record is the main row's; its group is its own.
"""

from __future__ import annotations

from dataclasses import replace

import torch

from videorl.config import RolloutConfig
from videorl.rollout.batch import RolloutBatch, concat_batches, pad_rows
from videorl.rollout.multiturn import MultiTurnRow
from videorl.rollout.subagents import SubagentRow, Subagents


def subagents_of(rollout: RolloutConfig) -> Subagents | None:
    """The run's sub-agents (`rollout.subagents`), or None when it has none."""
    if not rollout.subagents:
        return None
    return Subagents(frozenset(rollout.subagents), rollout.subagent_max_new_tokens)


def as_trajectory(sub: SubagentRow) -> MultiTurnRow:
    """A sub-agent's trajectory as a one-turn row: its prompt, then its tokens (all trained)."""
    ids = sub.response_ids.to(torch.long)
    types = sub.prompt.mm_token_type_ids
    context = replace(
        sub.prompt,
        input_ids=torch.cat([sub.prompt.input_ids, ids]),
        mm_token_type_ids=None
        if types is None
        else torch.cat([types, torch.zeros_like(ids, dtype=types.dtype)]),
        source=None,
    )
    return MultiTurnRow(
        prompt=sub.prompt,
        context=context,
        loss_mask=torch.ones(ids.numel()),
        logprobs=sub.logprobs,
        media=[],
        turns=1,
        truncated=sub.truncated,
        model_texts=[sub.text],
    )


def turn_advantage(advantages: torch.Tensor, row: MultiTurnRow, turn: int) -> float:
    """The advantage of the model tokens of `row`'s turn `turn` (its first one; every token
    of a turn has the same), from the row's [R] token `advantages`."""
    turns, model = row.token_turns(), row.loss_mask > 0
    found = torch.nonzero(model & (turns == turn)).flatten()
    return float(advantages[found[0]]) if found.numel() else 0.0


def with_subagent_rows(batch: RolloutBatch) -> RolloutBatch:
    """`batch` followed by one row per sub-agent trajectory of its rows, each with the
    advantage of the calling turn (module docstring); `batch` itself when it has none."""
    parents: list[int] = []
    subs: list[SubagentRow] = []
    values: list[float] = []
    advantages = batch.advantages
    for index, row in enumerate(batch.trajectories or ()):
        for sub in row.subagents if row is not None else ():
            assert row is not None and advantages is not None, "advantages come first"
            parents.append(index)
            subs.append(sub)
            values.append(turn_advantage(advantages[index], row, sub.turn))
    if not subs:
        return batch
    trajectories = [as_trajectory(sub) for sub in subs]
    length = max(int(t.response_ids.numel()) for t in trajectories)
    masks = [t.loss_mask * v for t, v in zip(trajectories, values, strict=True)]
    none = torch.zeros(len(subs), dtype=torch.bool)
    parent = torch.tensor(parents, dtype=torch.long)
    extra = RolloutBatch(
        records=[batch.row_records()[i] for i in parents],
        prompts=[sub.prompt for sub in subs],
        videos=[None] * len(subs),
        group_ids=torch.arange(len(subs)),
        responses=[t.response_ids for t in trajectories],
        texts=[sub.text for sub in subs],
        is_annotation=none,
        off_policy=none.clone(),
        truncated=torch.tensor([sub.truncated for sub in subs], dtype=torch.bool),
        rewards=batch.scored_rewards()[parent],
        components=[dict(batch.scored_components()[i]) for i in parents],
        advantages=pad_rows(masks, length),
        trajectories=list[MultiTurnRow | None](trajectories),
    )
    merged = concat_batches([batch, extra])
    return replace(merged, metrics=batch.metrics).with_metrics(
        **{"subagents/rows": float(len(subs)), "subagents/advantage_mean": _mean(values)}
    )


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0
