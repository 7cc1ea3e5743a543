"""`rollout.oversample`: rounds that take the groups that end first (docs/async.md#the-tail).

A worker's round generates the groups earlier rounds cut off (its carry) together with the
step's new prompts, so `oversample` x the step's groups are in flight, and stops as soon as
the step's number of groups has ended, carried groups taken first. A group cut once
(`continue`) or twice (`restart`) must end in its next round, so none waits forever. The
step trains on those groups; the others are cut and carried to the next round:

- `rollout.partial: restart` carries their prompts only: they are sampled again, from
  scratch, with the next round's weights;
- `continue` carries the tokens sampled so far with their behaviour log-probs and the
  version that sampled them; the next round goes on from them (`with_prefix`) with its
  weights. A row's version is its oldest token's, and its behaviour log-probs are per
  token, so the decoupled loss corrects each token for the weights that sampled it.

All rows run side by side in one `generate` call whose stopping criterion is the round's
quota (`models/generate.py: RoundQuota`): decoding stops for every row at once. A group's
fresh rows share one prefill of its prompt; a continued row is prefilled with its tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import torch

from videorl.data.records import TaskRecord
from videorl.models.generate import RoundQuota, generate_rows, trim_response
from videorl.models.inputs import PromptEncoding, with_prefix
from videorl.models.logprobs import logprobs_in_microbatches
from videorl.reduction import MetricValue, summed
from videorl.rollout.batch import RolloutBatch
from videorl.rollout.fingerprints import with_fingerprints
from videorl.rollout.prompting import decode_prompts
from videorl.trainer.draw import (
    Producer,
    RewardStages,
    no_grad_settings,
    rewards,
    with_annotation_rows,
)
from videorl.trainer.metrics import StageTimer
from videorl.video.decode import DecodedVideo

_EMPTY = torch.zeros(0, dtype=torch.long)


@dataclass(frozen=True)
class Slot:
    """One row of a group: its tokens so far, whether it ended (end token or budget), the
    behaviour log-probs of those tokens and the version that sampled its first one."""

    tokens: torch.Tensor = _EMPTY
    ended: bool = False
    logp: torch.Tensor | None = None
    version: int = -1


@dataclass(frozen=True)
class CarriedGroup:
    """A group a round cut off: its record (as the data has it) and, for `continue`, its
    rows (`None`: sampled again from scratch)."""

    record: TaskRecord
    slots: tuple[Slot, ...] | None = None
    cuts: int = 1  # rounds that cut it so far


@dataclass(frozen=True)
class RoundGroup:
    """A group of this round: its record as decoded, prompt, media and rows."""

    source: TaskRecord
    record: TaskRecord
    prompt: PromptEncoding
    media: DecodedVideo | None
    slots: tuple[Slot, ...]
    cuts: int  # 0: new this round

    @property
    def done(self) -> bool:
        return all(s.ended for s in self.slots)

    @property
    def carried(self) -> bool:
        return self.cuts > 0


def oversampled_draw(
    producer: Producer,
    timer: StageTimer,
    reward_stages: RewardStages,
    carry: Sequence[CarriedGroup],
    records: Sequence[TaskRecord],
    *,
    need: int,
    step: int,
    version: int,
) -> tuple[RolloutBatch, list[CarriedGroup]]:
    """The step's `need` groups from the carry and the new `records` (see the module),
    scored, with per-token behaviour log-probs; and the groups carried to the next round."""
    cfg = producer.cfg
    with timer("decode"):
        groups, skipped = _decoded(producer, carry, records)
    need = min(need, len(groups))
    with timer("rollout"):
        groups = _generate(producer, groups, need, version)
    producer.engine.sleep()
    done = [g for g in groups if g.done]
    taken = ([g for g in done if g.carried] + [g for g in done if not g.carried])[:need]
    left = [g for g in groups if not any(g is t for t in taken)]
    batch = _batch(producer, taken).with_metrics(
        **skipped,
        **{
            "async/cut_groups": summed(len(left)),
            "async/carried_taken": summed(sum(g.carried for g in taken)),
        },
    )
    if cfg.algorithm.annotation_rows and batch.num_rows:
        batch = with_annotation_rows(batch, producer)
    if cfg.trainer.check_inputs:  # what each row's model saw, for the later forwards
        batch = with_fingerprints(batch)
    if taken:
        with timer("reward"), producer.split_forwards():
            batch = rewards(
                batch, cfg, reward_stages, producer.pool, producer.logprob_model, step=step
            )
        with timer("behaviour"):
            batch = _with_behaviour(producer, batch, taken, version)
    with timer("behaviour"):
        return batch, _carried(producer, left)


def _decoded(
    producer: Producer, carry: Sequence[CarriedGroup], records: Sequence[TaskRecord]
) -> tuple[list[RoundGroup], dict[str, MetricValue]]:
    """The round's groups, carried first; those whose media fail now drop out (counted)."""
    cfg, n = producer.cfg, producer.cfg.rollout.n
    wanted = [*carry, *(CarriedGroup(r) for r in records)]
    decoded = decode_prompts(
        [g.record for g in wanted],
        producer.videos,
        producer.policy,
        cfg.data,
        frame_budgets=cfg.data.frame_budgets,
    )
    groups, d = [], 0
    for i, group in enumerate(wanted):
        if d == len(decoded.records) or decoded.records[d].id != group.record.id:
            continue  # skipped: its media failed or its prompt was too long
        slots = group.slots if group.slots is not None else tuple(Slot() for _ in range(n))
        groups.append(
            RoundGroup(
                group.record,
                decoded.records[d],
                decoded.prompts[d],
                decoded.media[d],
                slots,
                cuts=group.cuts if i < len(carry) else 0,
            )
        )
        d += 1
    skipped: dict[str, MetricValue] = {
        "data/skipped_media": summed(decoded.skipped_media, "draw"),
        "data/skipped_long_prompts": summed(decoded.skipped_long, "draw"),
        "data/trimmed_long_prompts": summed(decoded.trimmed_long, "draw"),
    }
    return groups, skipped


def _generate(
    producer: Producer, groups: list[RoundGroup], need: int, version: int
) -> list[RoundGroup]:
    """Every row that has not ended goes on, in one call, until the quota: `need` groups
    ended, every carried one among them. A group's fresh rows share its prompt's prefill;
    a continued row is prefilled with its tokens so far."""
    budget = producer.cfg.rollout.max_new_tokens
    entries = _entries(groups)
    if not entries:
        return groups
    rows = [(g, j) for _, g, slots in entries for j in slots]
    quota = RoundQuota(
        need=max(0, need - sum(group.done for group in groups)),
        must=tuple(sorted({g for g, _ in rows if groups[g].cuts >= _cut_limit(producer)})),
        row_groups=tuple(g for g, _ in rows),
        row_budgets=tuple(budget - groups[g].slots[j].tokens.numel() for g, j in rows),
    )
    sampled = generate_rows(
        producer.engine.loaded,
        [prompt for prompt, _, _ in entries],
        [len(slots) for _, _, slots in entries],
        producer.cfg.rollout.sampling(n=1, quota=quota),
    )
    slots = [list(group.slots) for group in groups]
    eos = producer.policy.eos_token_ids
    for (g, j), new in zip(rows, (row for entry in sampled for row in entry), strict=True):
        old = slots[g][j]
        new, _ = trim_response(new[: budget - old.tokens.numel()], eos)
        tokens = torch.cat([old.tokens, new])
        ended = tokens.numel() >= budget or bool(torch.isin(new, torch.tensor(eos)).any())
        first = old.version if old.tokens.numel() else version
        slots[g][j] = Slot(tokens, ended, old.logp, first)
    return [replace(group, slots=tuple(s)) for group, s in zip(groups, slots, strict=True)]


def _cut_limit(producer: Producer) -> int:
    """Cuts after which a group must end in its round: once for `continue` (its first tokens
    would pass max_staleness), twice for `restart` (so that no prompt starves)."""
    return 1 if producer.cfg.rollout.partial == "continue" else 2


def _entries(groups: list[RoundGroup]) -> list[tuple[PromptEncoding, int, list[int]]]:
    """What to prefill: each group's prompt once for its fresh rows, and each continued row
    (tokens so far) on its own; with the group and the row slots each one samples."""
    entries = []
    for g, group in enumerate(groups):
        going = [j for j, s in enumerate(group.slots) if not s.ended]
        fresh = [j for j in going if not group.slots[j].tokens.numel()]
        if fresh:
            entries.append((group.prompt, g, fresh))
        for j in going:
            if group.slots[j].tokens.numel():
                entries.append((with_prefix(group.prompt, group.slots[j].tokens), g, [j]))
    return entries


def _batch(producer: Producer, taken: list[RoundGroup]) -> RolloutBatch:
    """The taken groups as the step's batch, rows in group order."""
    tokenizer, eos = producer.policy.tokenizer, producer.policy.eos_token_ids
    rows = [(g, s) for g, group in enumerate(taken) for s in group.slots]
    responses = [s.tokens for _, s in rows]
    return RolloutBatch(
        records=[g.record for g in taken],
        prompts=[g.prompt for g in taken],
        videos=[g.media for g in taken],
        group_ids=torch.tensor([g for g, _ in rows], dtype=torch.long),
        responses=responses,
        texts=tokenizer.batch_decode(responses, skip_special_tokens=True),
        is_annotation=torch.zeros(len(rows), dtype=torch.bool),
        off_policy=torch.zeros(len(rows), dtype=torch.bool),
        truncated=torch.tensor([trim_response(r, eos)[1] for r in responses], dtype=torch.bool),
    )


def _forward_logp(
    producer: Producer, prompts: list[PromptEncoding], responses: list[torch.Tensor]
) -> torch.Tensor:
    return logprobs_in_microbatches(
        producer.logprob_model, prompts, responses, **no_grad_settings(producer.cfg)
    )


def _with_behaviour(
    producer: Producer, batch: RolloutBatch, taken: list[RoundGroup], version: int
) -> RolloutBatch:
    """Behaviour log-probs under this round's weights, where a continued row's tokens of an
    earlier round keep theirs; annotation rows (after the policy rows) are of this version."""
    logp = _forward_logp(producer, batch.row_prompts(), batch.responses)
    slots = [s for group in taken for s in group.slots]
    for row, slot in enumerate(slots):
        if slot.logp is not None:
            logp[row, : slot.logp.numel()] = slot.logp
    versions = torch.full((batch.num_rows,), version, dtype=torch.long)
    versions[: len(slots)] = torch.tensor([s.version for s in slots], dtype=torch.long)
    return replace(batch, behaviour_logp=logp, versions=versions)


def _carried(producer: Producer, left: list[RoundGroup]) -> list[CarriedGroup]:
    """The cut groups for the next round: `continue` keeps their rows, each new token's
    behaviour log-prob from this round's weights."""
    if producer.cfg.rollout.partial == "restart":
        return [CarriedGroup(g.source, cuts=g.cuts + 1) for g in left]
    rows = [
        (g, j)
        for g, group in enumerate(left)
        for j, s in enumerate(group.slots)
        if s.tokens.numel()
    ]
    logp = None
    if rows:
        prompts = [left[g].prompt for g, _ in rows]
        logp = _forward_logp(producer, prompts, [left[g].slots[j].tokens for g, j in rows])
    slots = [list(group.slots) for group in left]
    for r, (g, j) in enumerate(rows):
        slot = slots[g][j]
        now = logp[r, : slot.tokens.numel()].clone() if logp is not None else None
        if now is not None and slot.logp is not None:
            now[: slot.logp.numel()] = slot.logp
        slots[g][j] = replace(slot, logp=now)
    return [
        CarriedGroup(g.source, tuple(s), cuts=g.cuts + 1) for g, s in zip(left, slots, strict=True)
    ]


def carry_state(carry: Sequence[CarriedGroup] | None) -> list[dict[str, Any]] | None:
    """The carry as a checkpoint keeps it: each group's record id and rows as tensors."""
    if carry is None:
        return None
    return [
        {
            "id": group.record.id,
            "cuts": group.cuts,
            "slots": None
            if group.slots is None
            else [
                {"tokens": s.tokens, "ended": s.ended, "logp": s.logp, "version": s.version}
                for s in group.slots
            ],
        }
        for group in carry
    ]


def restore_carry(
    saved: list[dict[str, Any]] | None, records: Sequence[TaskRecord]
) -> list[CarriedGroup] | None:
    """`carry_state`'s groups again, their records found by id among the run's."""
    if saved is None:
        return None
    by_id: dict[str, TaskRecord] = {}
    for record in records:
        by_id.setdefault(record.id, record)
    return [
        CarriedGroup(
            by_id[group["id"]],
            None if group["slots"] is None else tuple(Slot(**s) for s in group["slots"]),
            cuts=group["cuts"],
        )
        for group in saved
    ]
