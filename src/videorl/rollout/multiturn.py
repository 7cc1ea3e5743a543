"""Multi-turn rollouts with tools, on the HF or the vLLM engine (docs/tools.md).

Each row starts from its prompt (encoded with the tool list, `tools.chat.tool_prompt_args`)
and alternates: the model generates until EOS; if its turn holds `<tool_call>`s, the runner
executes them (`tools/runner.py`), the tool turn (result text plus any images or clips as
media, `tools/chat.py`) is appended as context, and the model continues, up to
`max_turns` model turns and `max_total_tokens` tokens after the prompt.

A row keeps its whole context as one `PromptEncoding` (`context`: prompt, every model turn,
every tool turn, and the vision tensors of the prompt's and the tools' media in token
order), so the loss forward (`loss_inputs`) is built from exactly the tensors the last
generation call saw: the same frames, the same token types and so the same mRoPE
positions. `response_ids` are all tokens after the prompt; `loss_mask` is 1 on the model's
tokens and 0 on tool-turn tokens, which are context only. The context's `source` follows
along (the tokens before the processor expanded the media placeholders, and every media
item), so that an engine that runs the processor itself (vLLM) sees the same context.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Annotated, Any

import torch

from videorl.config.constraints import Checked, Constraint, Ge
from videorl.data.records import TaskRecord
from videorl.models.generate import Generation, SamplingParams, generate
from videorl.models.inputs import PromptEncoding, collate
from videorl.models.loaded import LoadedModel
from videorl.models.visual_cache import note_merges
from videorl.reduction import MetricValue, maxed
from videorl.rewards.calls import ToolCallMade, verification_call
from videorl.rollout.subagents import SubagentRow, Subagents, run_subagents
from videorl.rollout.tools.chat import encode_tool_turn, tool_turn_text
from videorl.rollout.tools.parsing import parse_tool_calls
from videorl.rollout.tools.registry import ToolContext, ToolDecodes
from videorl.rollout.tools.runner import ToolOutcome, ToolRunner
from videorl.video.decode import DecodedVideo, VideoConfig

# (model, contexts, params) -> one Generation per context (params.n of them)
GenerateFn = Callable[[LoadedModel, Sequence[PromptEncoding], SamplingParams], list[Generation]]


@dataclass(frozen=True)
class MultiTurnLimits(Checked):
    """How long a multi-turn rollout may run."""

    # Most model turns per row; the last one may not call tools any more.
    max_turns: Annotated[int, Ge(1)] = 4
    # Most tokens per row after the prompt: model turns and tool turns together.
    max_total_tokens: Annotated[int, Ge(1)] = 2048
    # Most tool calls run per model turn; further calls in the same turn are errors.
    max_calls_per_turn: Annotated[int, Ge(1)] = 4

    @classmethod
    def refusal(cls, key: str, value: Any, constraint: Constraint) -> str:
        return f"multi-turn limit {key}={value!r} must be {constraint.rule()}"


@dataclass(frozen=True)
class ToolUse:
    """What one tool-using answer did (eval's predictions.jsonl keeps it as `tools`)."""

    calls: int  # tool calls made
    errors: int  # calls that returned an error to the model
    turns: int  # model turns, the answer's included

    def to_dict(self) -> dict[str, int]:
        return {"calls": self.calls, "errors": self.errors, "turns": self.turns}

    @classmethod
    def from_dict(cls, saved: Mapping[str, int]) -> ToolUse:
        return cls(saved.get("calls", 0), saved.get("errors", 0), saved.get("turns", 1))


@dataclass(frozen=True)
class MultiTurnRow:
    """One sampled trajectory: its tokens, loss mask, media and tool calls."""

    prompt: PromptEncoding  # the group's prompt, as encoded
    context: PromptEncoding  # prompt + every turn, with every turn's vision tensors
    loss_mask: torch.Tensor  # [R] float: 1 model tokens, 0 tool-turn tokens
    # [R] sampling log-probs (0 on tool tokens and forced tokens); empty if not asked for
    logprobs: torch.Tensor
    media: list[DecodedVideo]  # every video/image the model saw, in order (prompt's first)
    outcomes: list[ToolOutcome] = field(default_factory=list)
    turns: int = 1  # model turns
    truncated: bool = False  # stopped by a budget (tokens or turns), not by a final answer
    model_texts: list[str] = field(default_factory=list)  # each model turn, decoded
    call_turns: list[int] = field(default_factory=list)  # the model turn of each outcome
    # the completeness check's answer (`rollout/verification.py`), None when not run
    verification: str | None = None
    # the sub-agents its calls ran (`rollout/subagents.py`), in call order
    subagents: list[SubagentRow] = field(default_factory=list)

    @property
    def response_ids(self) -> torch.Tensor:
        """Every token after the prompt (model and tool turns)."""
        return self.context.input_ids[self.prompt.length :]

    @property
    def response_token_types(self) -> torch.Tensor:
        """Token types after the prompt (tool-turn media tokens are 1 image / 2 video)."""
        types = self.context.mm_token_type_ids
        if types is None:
            return torch.zeros_like(self.response_ids, dtype=torch.int32)
        return types[self.prompt.length :]

    @property
    def calls(self) -> int:
        return len(self.outcomes)

    @property
    def errors(self) -> int:
        return sum(not o.ok for o in self.outcomes)

    @property
    def use(self) -> ToolUse:
        return ToolUse(self.calls, self.errors, self.turns)

    def calls_made(self) -> tuple[ToolCallMade, ...]:
        """The row's calls as reward functions receive them (`rewards/calls.py`), the
        completeness check's answer last when it ran."""
        turns = self.call_turns or [1] * len(self.outcomes)
        made = tuple(
            ToolCallMade(
                name=o.name,
                arguments=dict(o.call.arguments or {}),
                ok=o.ok,
                error=o.error,
                seconds=o.seconds,
                turn=turn,
                turn_text=self.model_texts[turn - 1] if self.model_texts else "",
            )
            for o, turn in zip(self.outcomes, turns, strict=True)
        )
        if self.verification is None:
            return made
        return (*made, verification_call(self.verification))

    def token_turns(self) -> torch.Tensor:
        """[R] the 1-based model turn of each response token: a turn starts at each 0 -> 1
        step of the loss mask; tool-turn tokens carry the turn they follow."""
        mask = self.loss_mask.float()
        starts = torch.diff(mask, prepend=torch.zeros(1)) > 0
        return torch.cumsum(starts.long(), dim=0).clamp_min(1)

    @property
    def text(self) -> str:
        """The final model turn (what answer rewards read)."""
        return self.model_texts[-1] if self.model_texts else ""

    def loss_prompt(self) -> PromptEncoding:
        """The prompt as the loss forward takes it: its tokens, with the vision tensors of
        every media item of the trajectory (the tools' follow in the response region)."""
        return replace(self.prompt, vision=dict(self.context.vision), source=None)


def extend(
    context: PromptEncoding,
    ids: torch.Tensor,
    types: torch.Tensor | None = None,
    vision: Mapping[str, torch.Tensor] | None = None,
    *,
    template_ids: torch.Tensor | None = None,
    media: Sequence[DecodedVideo] = (),
) -> PromptEncoding:
    """`context` followed by tokens `ids` (types 0 unless given) and their vision tensors;
    its `source` (if it has one) by `template_ids`, the same tokens before the processor
    expanded the placeholders of `media` (default: `ids`, which then hold no media)."""
    if media and template_ids is None:
        raise ValueError("tokens with media need their template ids (one placeholder per item)")
    merged = dict(context.vision)
    for key, value in (vision or {}).items():
        merged[key] = torch.cat([merged[key], value]) if key in merged else value
    note_merges(context.vision, vision or {}, merged)  # each item encoded once (visual_cache)
    old_types = context.mm_token_type_ids
    if old_types is None and types is None:
        new_types = None
    else:
        if old_types is None:
            old_types = torch.zeros_like(context.input_ids, dtype=torch.int32)
        if types is None:
            types = torch.zeros_like(ids, dtype=old_types.dtype)
        new_types = torch.cat([old_types, types.to(old_types.dtype)])
    source = context.source
    if source is not None:
        added = (ids if template_ids is None else template_ids).to(torch.long)
        source = replace(
            source,
            token_ids=torch.cat([source.token_ids, added]),
            tool_media=(*source.tool_media, *media),
        )
    return PromptEncoding(
        input_ids=torch.cat([context.input_ids, ids.to(torch.long)]),
        mm_token_type_ids=new_types,
        vision=merged,
        source=source,
    )


@dataclass
class _Row:
    prompt: PromptEncoding
    ctx: ToolContext
    context: PromptEncoding
    mask: list[torch.Tensor] = field(default_factory=list)
    logprobs: list[torch.Tensor] = field(default_factory=list)
    media: list[DecodedVideo] = field(default_factory=list)
    outcomes: list[ToolOutcome] = field(default_factory=list)
    call_turns: list[int] = field(default_factory=list)
    subagents: list[SubagentRow] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    truncated: bool = False
    done: bool = False
    want_logprobs: bool = False

    @property
    def used(self) -> int:
        return self.context.length - self.prompt.length


def _prompt_media(prompt: PromptEncoding) -> list[DecodedVideo]:
    source = prompt.source
    if source is None:
        return []
    return [m for m in (source.image, source.video) if m is not None]


def _hf_generate(
    loaded: LoadedModel, contexts: Sequence[PromptEncoding], params: SamplingParams
) -> list[Generation]:
    return generate(loaded, contexts, params)


def rollout_multiturn(
    loaded: LoadedModel,
    prompts: Sequence[PromptEncoding],
    contexts: Sequence[ToolContext],
    runner: ToolRunner,
    params: SamplingParams,
    limits: MultiTurnLimits,
    *,
    template_kwargs: Mapping[str, Any] | None = None,
    generate_fn: GenerateFn = _hf_generate,
    subagents: Subagents | None = None,
) -> list[list[MultiTurnRow]]:
    """`params.n` trajectories per prompt (`contexts[i]` is prompt i's tool context);
    `params.max_new_tokens` bounds each model turn, `limits` the whole trajectory; the calls
    of `subagents.tools` are answered by sub-agents of the same policy (`rollout/subagents.py`)."""
    first = generate_fn(loaded, prompts, params)
    rows = [
        _Row(p, c, p, media=_prompt_media(p), want_logprobs=params.logprobs)
        for p, c in zip(prompts, contexts, strict=True)
        for _ in range(params.n)
    ]
    pending = _expand(rows, first, params.n)
    turn = 1
    ask = _Subagents(subagents, params, generate_fn, template_kwargs) if subagents else None
    while pending:
        active = []
        for row, gen in pending:
            _take_turn(loaded, row, gen, runner, limits, turn, template_kwargs, ask)
            if not row.done:
                active.append(row)
        if not active:
            break
        turn += 1
        budget = min(limits.max_total_tokens - r.used for r in active)
        step = replace(params, n=1, max_new_tokens=max(1, min(params.max_new_tokens, budget)))
        outs = generate_fn(loaded, [r.context for r in active], step)
        pending = list(zip(active, outs, strict=True))
    return [
        [_finish(r) for r in rows[i * params.n : (i + 1) * params.n]] for i in range(len(prompts))
    ]


def answer_with_tools(
    loaded: LoadedModel,
    records: Sequence[TaskRecord],
    prompts: Sequence[PromptEncoding],
    media: Sequence[DecodedVideo | None],
    runner: ToolRunner,
    params: SamplingParams,
    limits: MultiTurnLimits,
    *,
    video_config: VideoConfig,
    decodes: ToolDecodes | None = None,
    template_kwargs: Mapping[str, Any] | None = None,
    generate_fn: GenerateFn = _hf_generate,
    control: str | None = None,
    subagents: Subagents | None = None,
) -> list[list[MultiTurnRow]]:
    """`params.n` trajectories per record (`rollout_multiturn`) from its prompt (encoded
    with the tool list) and decoded `media`, the tools reading the record's original media
    (their outputs under the video `control`, if any); `decodes` (a new cache when None)
    decodes each window once. What training's rollouts, validation inside training and
    `videorl eval --tools` all answer with."""
    decodes = decodes if decodes is not None else ToolDecodes()
    contexts = [
        ToolContext(
            media=record.media,
            video=video,
            config=video_config,
            decodes=decodes,
            control=control,
            control_key=record.id,
        )
        for record, video in zip(records, media, strict=True)
    ]
    return rollout_multiturn(
        loaded,
        prompts,
        contexts,
        runner,
        params,
        limits,
        template_kwargs=template_kwargs,
        generate_fn=generate_fn,
        subagents=subagents,
    )


def forced_trajectory(
    loaded: LoadedModel,
    prompt: PromptEncoding,
    context: ToolContext,
    runner: ToolRunner,
    turns: Sequence[str],
    limits: MultiTurnLimits,
    *,
    template_kwargs: Mapping[str, Any] | None = None,
) -> MultiTurnRow:
    """The trajectory in which the model writes `turns` (each followed by EOS) and the
    tools answer its calls for real: a gold trajectory (`tools/gold.py`) as a row, with the
    same tool turns, media and loss mask a sampled row would have. No forward runs."""
    eos = loaded.eos_token_ids[0]
    scripted = iter(turns)

    def write(
        _: LoadedModel, contexts: Sequence[PromptEncoding], __: SamplingParams
    ) -> list[Generation]:
        text = next(scripted, None)
        if text is None:
            raise ValueError(f"the trajectory calls tools after its last turn: {list(turns)}")
        ids = loaded.tokenizer(text, add_special_tokens=False)["input_ids"]
        return [Generation([torch.tensor([*ids, eos])], [], [False]) for _ in contexts]

    longest = max(len(loaded.tokenizer(t, add_special_tokens=False)["input_ids"]) for t in turns)
    params = SamplingParams(n=1, max_new_tokens=longest + 1, temperature=0.0)
    [[row]] = rollout_multiturn(
        loaded,
        [prompt],
        [context],
        runner,
        params,
        limits,
        template_kwargs=template_kwargs,
        generate_fn=write,
    )
    return row


@dataclass(frozen=True)
class _Subagents:
    """The sub-agents of a rollout: they sample as its rows do, through its generate."""

    spec: Subagents
    params: SamplingParams
    generate_fn: GenerateFn
    template_kwargs: Mapping[str, Any] | None

    def __call__(
        self, loaded: LoadedModel, outcomes: Sequence[ToolOutcome]
    ) -> tuple[list[ToolOutcome], list[SubagentRow]]:
        return run_subagents(
            loaded, outcomes, self.spec, self.params, self.generate_fn, self.template_kwargs
        )


def _expand(rows: list[_Row], gens: list[Generation], n: int) -> list[tuple[_Row, Generation]]:
    """Row k of prompt i takes sample k of generation i (as one-sample generations)."""
    out = []
    for i, gen in enumerate(gens):
        for k in range(n):
            lp = gen.logprobs[k] if gen.logprobs else torch.zeros(0)
            single = Generation([gen.token_ids[k]], [lp], [gen.truncated[k]])
            out.append((rows[i * n + k], single))
    return out


def _take_turn(
    loaded: LoadedModel,
    row: _Row,
    gen: Generation,
    runner: ToolRunner,
    limits: MultiTurnLimits,
    turn: int,
    template_kwargs: Mapping[str, Any] | None,
    ask: _Subagents | None = None,
) -> None:
    """Append the model turn; run its calls (and their sub-agents) and append the tool
    turn, or end the row."""
    room = limits.max_total_tokens - row.used
    tokens = gen.token_ids[0][:room]
    cut = gen.truncated[0] or tokens.numel() < gen.token_ids[0].numel()
    row.context = extend(row.context, tokens)
    row.mask.append(torch.ones(tokens.numel()))
    sampled = gen.logprobs[0][: tokens.numel()].float() if gen.logprobs else torch.zeros(0)
    row.logprobs.append(sampled if sampled.numel() == tokens.numel() else torch.zeros(len(tokens)))
    text = loaded.tokenizer.decode(tokens, skip_special_tokens=True)
    row.texts.append(text)
    calls = parse_tool_calls(text)
    if not calls or cut:  # a final answer, or the turn ran out of tokens mid-way
        row.done, row.truncated = True, cut
        return
    if turn >= limits.max_turns:
        row.done, row.truncated = True, True
        return
    outcomes = runner.run_all(calls[: limits.max_calls_per_turn], row.ctx)  # concurrently
    for extra in calls[limits.max_calls_per_turn :]:
        message = f"at most {limits.max_calls_per_turn} tool calls per turn"
        outcomes.append(ToolOutcome(extra, f"Error: {message}", error=message))
    if ask is not None:
        outcomes, spawned = ask(loaded, outcomes)
        row.subagents.extend(replace(sub, turn=turn) for sub in spawned)
    ends_with_eos = tokens.numel() > 0 and int(tokens[-1]) in loaded.eos_token_ids
    text = tool_turn_text(
        loaded, outcomes, close_turn=not ends_with_eos, template_kwargs=template_kwargs
    )
    media = [m for o in outcomes for m in o.media]
    encoded = encode_tool_turn(loaded, text, media)
    row.outcomes.extend(outcomes)
    row.call_turns.extend([turn] * len(outcomes))
    if row.used + encoded.input_ids.numel() >= limits.max_total_tokens:
        row.done, row.truncated = True, True  # no room left to read the result and answer
        return
    row.context = extend(
        row.context,
        encoded.input_ids,
        encoded.mm_token_type_ids,
        encoded.vision,
        template_ids=encoded.template_ids,
        media=encoded.media,
    )
    row.mask.append(torch.zeros(encoded.input_ids.numel()))
    row.logprobs.append(torch.zeros(encoded.input_ids.numel()))
    row.media.extend(encoded.media)


def _finish(row: _Row) -> MultiTurnRow:
    return MultiTurnRow(
        prompt=row.prompt,
        context=row.context,
        loss_mask=torch.cat(row.mask) if row.mask else torch.zeros(0),
        logprobs=torch.cat(row.logprobs) if row.want_logprobs else torch.zeros(0),
        media=row.media,
        outcomes=row.outcomes,
        turns=len(row.texts),
        truncated=row.truncated,
        model_texts=row.texts,
        call_turns=row.call_turns,
        subagents=row.subagents,
    )


def loss_inputs(
    rows: Sequence[MultiTurnRow], pad_id: int
) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """Model inputs [left-padded prompt | right-padded turns] of `rows` and their loss mask
    [B, R] (1 on model tokens only): the tokens, token types and vision tensors the rollout
    generated with."""
    prompts = [row.loss_prompt() for row in rows]
    responses = [row.response_ids for row in rows]
    inputs, mask = collate(
        prompts, responses, pad_id, response_token_types=[r.response_token_types for r in rows]
    )
    for i, row in enumerate(rows):
        mask[i, : row.loss_mask.numel()] = row.loss_mask
    return inputs, mask


def tool_use_summary(uses: Sequence[ToolUse]) -> dict[str, float]:
    """Over answers that used tools: their number, calls and errors per answer, model turns
    (mean, max) and the share of answers that called a tool at least once."""
    count = len(uses)
    if not count:
        return {"answers": 0}
    return {
        "answers": count,
        "calls_per_answer": sum(u.calls for u in uses) / count,
        "errors_per_answer": sum(u.errors for u in uses) / count,
        "turns_mean": sum(u.turns for u in uses) / count,
        "turns_max": max(u.turns for u in uses),
        "answers_with_calls": sum(u.calls > 0 for u in uses) / count,
    }


def trajectory_metrics(rows: Sequence[MultiTurnRow]) -> dict[str, MetricValue]:
    """`tools/calls_per_row`, `tools/errors_per_row`, `tools/turns_mean`, `tools/turns_max`
    (the largest over draws and ranks too: `maxed`), and mean seconds per call of each tool
    (`tools/seconds/<name>`)."""
    if not rows:
        return {}
    count = len(rows)
    out: dict[str, MetricValue] = {
        "tools/calls_per_row": sum(r.calls for r in rows) / count,
        "tools/errors_per_row": sum(r.errors for r in rows) / count,
        "tools/turns_mean": sum(r.turns for r in rows) / count,
        "tools/turns_max": maxed(max(r.turns for r in rows)),
    }
    seconds: dict[str, list[float]] = {}
    for outcome in (o for r in rows for o in r.outcomes):
        seconds.setdefault(outcome.name, []).append(outcome.seconds)
    for name, values in sorted(seconds.items()):
        out[f"tools/seconds/{name}"] = sum(values) / len(values)
    return out
