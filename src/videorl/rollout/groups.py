"""Group building: policy rows (single- or multi-turn), TaRO constructed-prefix rows, OraRL
annotation rows."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import torch

from videorl.data.records import TaskRecord
from videorl.errors import ConfigError
from videorl.models.generate import Generation, SamplingParams
from videorl.models.inputs import PromptEncoding
from videorl.rewards.annotation import serialize_annotation
from videorl.rollout.batch import RolloutBatch
from videorl.rollout.engine import RolloutEngine
from videorl.rollout.multiturn import (
    GenerateFn,
    MultiTurnLimits,
    MultiTurnRow,
    answer_with_tools,
    trajectory_metrics,
)
from videorl.rollout.subagents import Subagents
from videorl.rollout.tools import ToolDecodes, ToolRunner
from videorl.video.decode import DecodedVideo, VideoConfig


def constructed_prefix(record: TaskRecord, rng: random.Random) -> str:
    """TaRO constructed reasoning (docs/methods.md#taro-constructed-rows; TaRO
    `src/utils.py: sample_reasoning`): the query (its trailing period stripped), then a random
    order-preserving subset (size uniform in 1..n) of the record's dense captions, one per
    line: each caption's own line where the data gave one (TaRO's `captions` strings), else
    `From 0.0s to 5.2s, caption` (the form of TaRO's prompt example)."""
    query = record.problem.strip().rstrip(".")
    text = f"<think>\nI need to find the specific moment {query}.\n"
    captions = list(record.captions)
    if captions:
        size = rng.randint(1, len(captions))
        chosen = sorted(rng.sample(range(len(captions)), size))
        text += "\n".join(captions[i].as_line() for i in chosen)
    return text


def generate_groups(
    engine: RolloutEngine,
    records: Sequence[TaskRecord],
    prompts: Sequence[PromptEncoding],
    videos: Sequence[DecodedVideo | None],
    params: SamplingParams,
    tokenizer: Any,
    *,
    constructed: torch.Tensor | None = None,
    rng: random.Random | None = None,
) -> RolloutBatch:
    """n rows per prompt; where `constructed[p, j]` is set, row j of prompt p continues a
    constructed prefix instead (flagged `off_policy`)."""
    generations = engine.generate(prompts, params)
    responses, truncated, off_policy, group_ids = [], [], [], []
    # A record without dense captions gets normal rollouts (TaRO: no constructed reasoning).
    wanted = (
        []
        if constructed is None
        else [(p, j) for p, j in torch.nonzero(constructed).tolist() if records[p].captions]
    )
    prefix_rows: dict[tuple[int, int], Generation] = {}
    forced: dict[tuple[int, int], int] = {}  # a constructed row's prefix length
    if constructed is not None:  # even with no rows: vLLM's data-parallel engines step in lockstep
        rng = rng or random.Random(0)
        prefixes = [
            torch.tensor(
                tokenizer.encode(constructed_prefix(records[p], rng), add_special_tokens=False),
                dtype=torch.long,
            )
            for p, _ in wanted
        ]
        continued = engine.continue_prefixes([prompts[p] for p, _ in wanted], prefixes, params)
        prefix_rows = {(p, j): gen for (p, j), gen in zip(wanted, continued, strict=True)}
        forced = {key: x.numel() for key, x in zip(wanted, prefixes, strict=True)}
    sampled: list[torch.Tensor] = []
    for p, gen in enumerate(generations):
        for j in range(params.n):
            source = prefix_rows.get((p, j))
            row = source if source is not None else gen
            k = 0 if source is not None else j
            responses.append(row.token_ids[k])
            truncated.append(row.truncated[k])
            off_policy.append(source is not None)
            group_ids.append(p)
            if params.logprobs:
                sampled.append(_sampled_logp(row.logprobs[k], forced.get((p, j), 0)))
    return RolloutBatch(
        records=list(records),
        prompts=list(prompts),
        videos=list(videos),
        group_ids=torch.tensor(group_ids, dtype=torch.long),
        responses=responses,
        texts=tokenizer.batch_decode(responses, skip_special_tokens=True),
        is_annotation=torch.zeros(len(responses), dtype=torch.bool),
        off_policy=torch.tensor(off_policy, dtype=torch.bool),
        truncated=torch.tensor(truncated, dtype=torch.bool),
        behaviour_logp=padded_rows(sampled, NOT_SAMPLED) if params.logprobs else None,
    )


# A behaviour log-prob of a token no policy sampled (TaRO's forced prefix, OraRL's
# annotation rows): the off-policy correction leaves such tokens alone (w = 1).
NOT_SAMPLED = float("nan")


def _sampled_logp(logp: torch.Tensor, forced: int) -> torch.Tensor:
    """A row's sampling log-probs, its first `forced` tokens marked as not sampled."""
    out = logp.float().clone()
    out[:forced] = NOT_SAMPLED
    return out


def padded_rows(rows: Sequence[torch.Tensor], fill: float) -> torch.Tensor:
    """[B, longest] of the rows, right-padded with `fill`."""
    width = max((r.numel() for r in rows), default=0)
    out = torch.full((len(rows), width), fill)
    for i, row in enumerate(rows):
        out[i, : row.numel()] = row
    return out


def engine_generate(engine: RolloutEngine) -> GenerateFn:
    """The multi-turn loop's generate function that generates through `engine`."""
    return lambda _, contexts, params: engine.generate(contexts, params)


def generate_tool_groups(
    engine: RolloutEngine,
    records: Sequence[TaskRecord],
    prompts: Sequence[PromptEncoding],
    videos: Sequence[DecodedVideo | None],
    params: SamplingParams,
    *,
    runner: ToolRunner,
    limits: MultiTurnLimits,
    decodes: ToolDecodes,
    video_config: VideoConfig,
    template_kwargs: Mapping[str, Any] | None = None,
    verify: bool = False,
    subagents: Subagents | None = None,
) -> RolloutBatch:
    """n multi-turn rows per prompt (`rollout_multiturn`, generating through `engine`): a
    row's response is every token after its prompt, its text the final model turn (what
    answer rewards read), its trajectory in `RolloutBatch.trajectories`; the `tools/*`
    metrics describe the rows. The tools read each record's original media (`decodes`
    caches their decodes for the call).

    An engine that steps in lockstep with other ranks (`VLLMEngine.lockstep`: data-parallel
    vLLM engines, a tensor-parallel group) gets `limits.max_turns` generate calls on every
    rank, the last ones with no requests once this rank's rows are done. `verify` runs the
    completeness check on every row (`rollout/verification.py`), one more generate call;
    sub-agents (`subagents`, generating through the same engine) add calls no other rank
    can match, so such an engine refuses them."""
    if subagents is not None and getattr(engine, "lockstep", False):
        raise ConfigError(
            "rollout.subagents runs extra generate calls that lockstep vLLM engines (data "
            "or tensor parallel) cannot match across ranks; use rollout.engine=hf or one rank"
        )
    calls: list[int] = []

    def generate(
        _loaded: Any, contexts: Sequence[PromptEncoding], step: SamplingParams
    ) -> list[Generation]:
        calls.append(len(contexts))
        return engine.generate(contexts, step)

    groups = answer_with_tools(
        engine.loaded,
        records,
        prompts,
        videos,
        runner,
        params,
        limits,
        video_config=video_config,
        decodes=decodes,
        template_kwargs=template_kwargs,
        generate_fn=generate,
        subagents=subagents,
    )
    if getattr(engine, "lockstep", False):
        for _ in range(len(calls), limits.max_turns):
            engine.generate([], replace(params, n=1))
    rows = [row for group in groups for row in group]
    if verify:
        from videorl.rollout.verification import verify_rows

        row_records = [r for r, group in zip(records, groups, strict=True) for _ in group]
        rows = verify_rows(
            engine.loaded,
            row_records,
            rows,
            params,
            engine.generate,
            template_kwargs=template_kwargs,
            lockstep=getattr(engine, "lockstep", False),
        )
    none = torch.zeros(len(rows), dtype=torch.bool)
    return RolloutBatch(
        records=list(records),
        prompts=list(prompts),
        videos=list(videos),
        group_ids=torch.tensor(
            [g for g, group in enumerate(groups) for _ in group], dtype=torch.long
        ),
        responses=[row.response_ids for row in rows],
        texts=[row.text for row in rows],
        is_annotation=none,
        off_policy=none.clone(),
        truncated=torch.tensor([row.truncated for row in rows], dtype=torch.bool),
        trajectories=list[MultiTurnRow | None](rows),
    ).with_metrics(**trajectory_metrics(rows))


def annotation_tokens(
    record: TaskRecord, tokenizer: Any, eos_id: int, budget: int, think: bool
) -> torch.Tensor:
    """The serialized ground truth, tokenized without special tokens, plus EOS, truncated to
    the response budget (docs/methods.md#orarl) by dropping its *head*, as OraRL does, so that
    `</answer>` and EOS survive (`annotation_was_cut` tells whether it was cut)."""
    ids = tokenizer.encode(serialize_annotation(record, think=think), add_special_tokens=False)
    return torch.tensor((ids + [eos_id])[-budget:], dtype=torch.long)


def annotation_was_cut(record: TaskRecord, tokenizer: Any, budget: int, think: bool) -> bool:
    """Whether the annotation row (with EOS) is longer than the response budget."""
    ids = tokenizer.encode(serialize_annotation(record, think=think), add_special_tokens=False)
    return len(ids) + 1 > budget


def add_annotation_rows(
    batch: RolloutBatch, tokenizer: Any, eos_id: int, budget: int, think: bool = False
) -> RolloutBatch:
    """Append one annotation row per group (OraRL), flagged `is_annotation`."""
    extra = [annotation_tokens(r, tokenizer, eos_id, budget, think) for r in batch.records]
    count = len(extra)
    return replace(
        batch,
        group_ids=torch.cat([batch.group_ids, torch.arange(count)]),
        responses=batch.responses + extra,
        texts=batch.texts + tokenizer.batch_decode(extra, skip_special_tokens=True),
        is_annotation=torch.cat([batch.is_annotation, torch.ones(count, dtype=torch.bool)]),
        behaviour_logp=None
        if batch.behaviour_logp is None
        else padded_rows(
            [*batch.behaviour_logp, *(torch.full((len(x),), NOT_SAMPLED) for x in extra)],
            NOT_SAMPLED,
        ),
        trajectories=None
        if batch.trajectories is None
        else batch.trajectories + [None] * count,  # the direct answer: single-turn
        off_policy=torch.cat([batch.off_policy, torch.zeros(count, dtype=torch.bool)]),
        truncated=torch.cat(
            [
                batch.truncated,
                torch.tensor(
                    [annotation_was_cut(r, tokenizer, budget, think) for r in batch.records],
                    dtype=torch.bool,
                ),
            ]
        ),
    )
