"""A prompt over `data.max_prompt_tokens`: skipped, or trimmed to fewer frames until it fits.

`data.long_prompts: skip` (the default) drops the record for the step and counts it;
`trim` keeps fewer of its video's frames (`video.subsample.fewer_frames`: the same uniform
stride, the true timestamps of the frames kept, the actual fps lowered) and encodes it again,
until the prompt fits or two frames (one temporal patch) are left, then skips it. The number
kept comes from the tokens a frame costs: first the video's share of the prompt
(`mm_token_type_ids`, else the whole prompt over its frames), then the cost measured between
two encodings. Both warn once per record, in one line naming the record, its frames, its
tokens and the budget (docs/long_videos.md#token-budget).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import NamedTuple

from videorl.data.records import TaskRecord
from videorl.models.inputs import PromptEncoding
from videorl.video.decode import DecodedVideo
from videorl.video.subsample import fewer_frames

log = logging.getLogger(__name__)

MIN_FRAMES = 2  # one temporal patch
VIDEO_TOKEN_TYPE = 2  # `mm_token_type_ids` of a video's tokens


class Fitted(NamedTuple):
    """A prompt within the budget and its media, or (None, None): skipped."""

    prompt: PromptEncoding | None
    media: DecodedVideo | None
    trimmed: bool = False


def _video_tokens(prompt: PromptEncoding) -> int:
    types = prompt.mm_token_type_ids
    return prompt.length if types is None else int((types == VIDEO_TOKEN_TYPE).sum())


def _fitting(frames: int, length: int, budget: int, per_frame: float) -> int:
    """The even frame count whose prompt, at `per_frame` tokens a frame, fits `budget`."""
    n = frames - math.ceil((length - budget) / max(per_frame, 1e-9))
    return max(0, n - n % 2)


def fit_prompt(
    record: TaskRecord,
    media: DecodedVideo | None,
    prompt: PromptEncoding,
    encode: Callable[[TaskRecord, DecodedVideo | None], PromptEncoding],
    budget: int | None,
    mode: str,
) -> Fitted:
    """`prompt` as it is when within `budget` (None: no limit); else trimmed (`mode` trim, a
    video) or skipped, with the one-line warning."""
    if budget is None or prompt.length <= budget:
        return Fitted(prompt, media)
    frames = 0 if media is None or media.meta.is_image else media.meta.num_frames
    said = (
        f"sample {record.id}: {frames} frames make {prompt.length} prompt tokens > "
        if frames
        else f"sample {record.id}: its prompt has {prompt.length} tokens > "
    ) + f"data.max_prompt_tokens={budget}"
    if mode == "trim" and media is not None and frames > MIN_FRAMES:
        fitted = _trim(record, media, prompt, encode, budget)
        if fitted.prompt is not None:
            kept = fitted.media.meta.num_frames if fitted.media is not None else 0
            log.warning("%s; trimmed to %d frames (%d tokens)", said, kept, fitted.prompt.length)
            return fitted
        log.warning("skipping %s; even %d frames do not fit", said, MIN_FRAMES)
        return Fitted(None, None)
    fix = (
        "set data.long_prompts=trim, or lower video.max_frames or video.max_pixels"
        if frames > MIN_FRAMES
        else "raise data.max_prompt_tokens"
    )
    log.warning("skipping %s; %s", said, fix)
    return Fitted(None, None)


def _trim(
    record: TaskRecord,
    media: DecodedVideo,
    prompt: PromptEncoding,
    encode: Callable[[TaskRecord, DecodedVideo | None], PromptEncoding],
    budget: int,
) -> Fitted:
    """Fewer of `media`'s frames until the prompt fits (a few encodings: the per-frame cost
    is re-measured after each); (None, None) when two frames do not fit."""
    frames, length = media.meta.num_frames, prompt.length
    per_frame = _video_tokens(prompt) / frames
    while True:
        n = min(_fitting(frames, length, budget, per_frame), frames - MIN_FRAMES)
        if n < MIN_FRAMES:
            return Fitted(None, None)
        fewer = fewer_frames(media, n)
        shorter = encode(record, fewer)
        if shorter.length <= budget:
            return Fitted(shorter, fewer, trimmed=True)
        per_frame = (length - shorter.length) / (frames - n)
        frames, length = n, shorter.length
