"""Sub-agent rollouts (ParaVT's hierarchical agent, docs/tools.md#sub-agents).

With `rollout.subagents: [crop_video]`, a successful call to a listed tool does not show
its frames to the main row: the same policy (the same weights, the same engine) reads them
in a context of its own, a user turn of the frames and ParaVT's summary prompt
(`paravt/rl/subagents/crop_video/cropped_video.py: build_prompt`; at most 16 of the call's
frames, evenly spaced, as its `fetch_video(max_frames=16)`), and the text it writes (sampled
as the main rows are, n = 1, up to `rollout.subagent_max_new_tokens`, by default the
rollout's `max_new_tokens`, as ParaVT's `gconfig.new(n_samples=1)`) is the call's result in
the main row's tool turn, cut to its first 512 tokens plus " [truncated]" when longer
(`workflow.py: MAX_TOOL_RESPONSE_TOKENS`). The calls of one turn go to their sub-agents
together, one generate call.

A sub-agent's trajectory is kept with the main row (`MultiTurnRow.subagents`): its prompt
(the frames and the summary prompt) and its output. ParaVT trains main rows only
(`include_subagent_in_loss=False`, its published trainer); with
`rollout.include_subagent_in_loss: true` each sub-agent trajectory becomes a row of the
update whose prompt tokens are context (loss mask 0) and whose output tokens train with the
advantage of the main row's turn that made the call (`trainer/subagents.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import torch

from videorl.models.generate import Generation, SamplingParams
from videorl.models.inputs import PromptEncoding, encode_prompt
from videorl.models.loaded import LoadedModel
from videorl.rollout.tools.runner import ToolOutcome
from videorl.video.decode import DecodedVideo
from videorl.video.frame_budget import keep_frames

MAX_FRAMES = 16  # cropped_video.py: fetch_video(fps=1, max_frames=16)
RESULT_TOKENS = 512  # workflow.py: MAX_TOOL_RESPONSE_TOKENS, the result the main row reads
GenerateFn = Callable[[LoadedModel, Sequence[PromptEncoding], SamplingParams], list[Generation]]


@dataclass(frozen=True)
class Subagents:
    """Which tools' calls run a sub-agent, and its token budget."""

    tools: frozenset[str]
    max_new_tokens: int | None = None  # None: the main rows' per-turn budget


@dataclass(frozen=True)
class SubagentRow:
    """One sub-agent's trajectory: its own prompt, the tokens it wrote (EOS kept), their
    sampling log-probs (empty unless asked for), its text, whether its budget cut it, and the
    main row's model turn whose call ran it."""

    prompt: PromptEncoding
    response_ids: torch.Tensor
    logprobs: torch.Tensor
    text: str
    truncated: bool
    turn: int = 1


def clock(seconds: float) -> str:
    """`MM:SS`, as ParaVT's prompt writes a time."""
    return f"{int(seconds // 60):02d}:{int(seconds % 60):02d}"


def summary_prompt(start: float | None, end: float | None) -> str:
    """ParaVT's sub-agent prompt for the window `[start, end]` seconds (no window: the
    frames the tool returned)."""
    where = (
        f"a video segment from {clock(start)} to {clock(end)} (duration: {end - start:.1f} seconds)"
        if start is not None and end is not None
        else "a video segment"
    )
    return (
        f"You are analyzing {where}.\n\n"
        "The images shown are frames sampled from this video segment. Carefully examine each "
        "frame in sequence to understand the temporal progression of events.\n\n"
        "Your task: Provide a concise summary of what happens in this video segment.\n\n"
        "Guidelines:\n"
        "- Describe the key actions, events, or changes that occur across the frames\n"
        "- Note any important objects, people, or elements visible in the scene\n"
        "- Capture the temporal flow (what happens first, then, finally)\n"
        "- Focus on factual observations rather than interpretations\n\n"
        "Summary:"
    )


def _window(arguments: Mapping[str, Any]) -> tuple[float | None, float | None]:
    start = arguments.get("start_time", arguments.get("start"))
    end = arguments.get("end_time", arguments.get("end"))
    if isinstance(start, int | float) and isinstance(end, int | float) and end > start:
        return float(start), float(end)
    return None, None


def as_frames(media: Sequence[DecodedVideo]) -> tuple[DecodedVideo | None, bool]:
    """The outcome's media as one prompt input of at most `MAX_FRAMES` frames: (a clip, False)
    for one video, (its images stacked as frames, True: each goes in as an image, as ParaVT's
    sub-agent gets them) for images of one size; (None, False) otherwise."""
    if len(media) == 1 and not media[0].meta.is_image:
        return keep_frames(media[0], MAX_FRAMES), False
    if not media or any(not m.meta.is_image for m in media):
        return None, False
    if len({tuple(m.frames.shape[1:]) for m in media}) != 1:
        return None, False
    count = len(media)
    meta = replace(
        media[0].meta,
        source_fps=1.0,
        duration=float(count),
        frame_indices=tuple(range(count)),
        timestamps=tuple(float(i) for i in range(count)),
        fps=1.0,
    )
    return keep_frames(DecodedVideo(torch.cat([m.frames for m in media]), meta), MAX_FRAMES), True


def subagent_prompt(
    loaded: LoadedModel, outcome: ToolOutcome, template_kwargs: Mapping[str, Any] | None
) -> PromptEncoding | None:
    """The sub-agent's context for `outcome` (its frames, then the summary prompt), or None
    when the outcome has no frames a prompt can hold (the main row then gets it as is)."""
    video, as_images = as_frames(outcome.media)
    if video is None:
        return None
    start, end = _window(outcome.call.arguments or {})
    return encode_prompt(
        loaded,
        summary_prompt(start, end),
        video=video,
        template_kwargs=dict(template_kwargs or {}),
        video_as_images=as_images,
    )


def run_subagents(
    loaded: LoadedModel,
    outcomes: Sequence[ToolOutcome],
    spec: Subagents,
    params: SamplingParams,
    generate_fn: GenerateFn,
    template_kwargs: Mapping[str, Any] | None = None,
) -> tuple[list[ToolOutcome], list[SubagentRow]]:
    """`outcomes` with each successful call of `spec.tools` answered by its sub-agent (its
    text, no media; the others unchanged, in call order), and the sub-agents' rows in call
    order. One generate call for all of them (`params` with n = 1 and the sub-agent budget)."""
    prompts: dict[int, PromptEncoding] = {}
    for index, outcome in enumerate(outcomes):
        if outcome.ok and outcome.name in spec.tools:
            prompt = subagent_prompt(loaded, outcome, template_kwargs)
            if prompt is not None:
                prompts[index] = prompt
    if not prompts:
        return list(outcomes), []
    step = replace(params, n=1, max_new_tokens=spec.max_new_tokens or params.max_new_tokens)
    generations = generate_fn(loaded, list(prompts.values()), step)
    answered, rows = list(outcomes), []
    for (index, prompt), gen in zip(prompts.items(), generations, strict=True):
        ids = gen.token_ids[0]
        text = loaded.tokenizer.decode(ids, skip_special_tokens=True).strip()
        logprobs = gen.logprobs[0].float() if gen.logprobs else torch.zeros(0)
        rows.append(SubagentRow(prompt, ids, logprobs, text, bool(gen.truncated[0])))
        answered[index] = replace(outcomes[index], text=shown(loaded, text), media=())
    return answered, rows


def shown(loaded: LoadedModel, text: str, limit: int = RESULT_TOKENS) -> str:
    """The sub-agent's text as the main row reads it: its first `limit` tokens, then
    " [truncated]", when it is longer (ParaVT's tool-response cap)."""
    ids = loaded.tokenizer.encode(text, add_special_tokens=False)
    if len(ids) <= limit:
        return text
    return loaded.tokenizer.decode(ids[:limit], skip_special_tokens=True) + " [truncated]"
