"""Completeness self-verification (TimeSearch-R's GRPO-CSV; `rollout.frame_search.verify`,
docs/fidelity.md#timesearch-r-configstimesearch_ryaml).

After a row's multi-turn rollout, the same policy answers the row's question again from
only the frames its tools returned: a second rollout of the row, one more generation with
the rollout's sampling. If those frames suffice, the answer is right; the reward plug-in
(`rewards/timesearch.py`) rewards a right final answer more when this check is right too.
The check's tokens are not trained; its answer reaches rewards as the row's last call
(`rewards/calls.VERIFICATION_CALL`).

As Time-Search/TimeSearch-R `time_r1/trainer/grpo_trainer_env.py` (`get_visual_trace`,
`use_counterfactual_reasoning`): a system turn asking for a brief answer or "I don't know",
then one user turn with every image or clip the tools returned and `Question: ...`; a row
whose tools returned no media answers "I don't know" without generating.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import torch

from videorl.data.records import TaskRecord
from videorl.models.generate import Generation, SamplingParams
from videorl.models.inputs import PromptEncoding, encode_prompt
from videorl.models.loaded import LoadedModel
from videorl.rollout.multiturn import MultiTurnRow
from videorl.video.decode import DecodedVideo, resize_frames

# grpo_trainer_env.py get_visual_trace: the system turn and the answer of a row without frames
SYSTEM = (
    "You are a helpful assistant. Please answer visual questions as briefly as possible. "
    "When you don't have enough visual information, please say 'I don't know'."
)
NO_FRAMES = "I don't know"

Generate = Callable[[Sequence[PromptEncoding], SamplingParams], list[Generation]]


def searched_frames(row: MultiTurnRow) -> DecodedVideo | None:
    """Every frame the row's tool calls returned, in call order, at the first one's size
    (None when they returned none)."""
    media = [m for outcome in row.outcomes if outcome.ok for m in outcome.media]
    if not media:
        return None
    height, width = media[0].frames.shape[-2:]
    frames = [
        m.frames
        if m.frames.shape[-2:] == (height, width)
        else resize_frames(m.frames, int(height), int(width))
        for m in media
    ]
    return DecodedVideo(frames=torch.cat(frames), meta=media[0].meta)


def question(record: TaskRecord) -> str:
    """`Question: ...`: the family's task text for the record (options included)."""
    return f"Question: {record.family.task.prompt(record)}"


def verify_rows(
    loaded: LoadedModel,
    records: Sequence[TaskRecord],
    rows: Sequence[MultiTurnRow],
    params: SamplingParams,
    generate: Generate,
    *,
    template_kwargs: Mapping[str, Any] | None = None,
    lockstep: bool = False,
) -> list[MultiTurnRow]:
    """Each row with its `verification` answer (`records[i]` is row i's record); one
    `generate` call for all rows that have frames, made even when none has with `lockstep`
    (an engine that steps with other ranks counts their calls)."""
    prompts, which = [], []
    for i, (record, row) in enumerate(zip(records, rows, strict=True)):
        frames = searched_frames(row)
        if frames is None:
            continue
        prompts.append(
            encode_prompt(
                loaded,
                question(record),
                video=frames,
                system=SYSTEM,
                template_kwargs=dict(template_kwargs or {}),
                video_as_images=True,
            )
        )
        which.append(i)
    outs = generate(prompts, replace(params, n=1, logprobs=False)) if prompts or lockstep else []
    answers = [NO_FRAMES] * len(rows)
    for i, gen in zip(which, outs, strict=True):
        answers[i] = loaded.tokenizer.decode(gen.token_ids[0], skip_special_tokens=True)
    return [replace(row, verification=text) for row, text in zip(rows, answers, strict=True)]
