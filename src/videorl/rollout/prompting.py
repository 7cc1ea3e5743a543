"""A task record plus its decoded media, as the policy's prompt encoding."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from videorl.data.coordinates import frame_size, model_convention, to_model_coordinates
from videorl.data.prompts import build_prompt
from videorl.data.published_prompts import style_system
from videorl.data.records import TaskRecord
from videorl.errors import MediaError
from videorl.models.chat_template import template_kwargs
from videorl.models.inputs import PromptEncoding, encode_prompt
from videorl.models.loading import LoadedModel
from videorl.rollout.prompt_budget import fit_prompt
from videorl.rollout.tools.chat import tool_prompt_args
from videorl.video.cache import MediaSource
from videorl.video.decode import DecodedVideo
from videorl.video.frame_budget import frame_budget, keep_frames

if TYPE_CHECKING:
    from videorl.config import DataConfig

log = logging.getLogger(__name__)

# A record and its decoded media (None: text only) -> the policy's prompt encoding.
Encoder = Callable[[TaskRecord, DecodedVideo | None], PromptEncoding]


class PromptSettings(Protocol):
    """A run's prompt settings, as `DataConfig` and `inference.RunSettings` hold them."""

    @property
    def think(self) -> bool: ...
    @property
    def chat_template_kwargs(self) -> Mapping[str, Any]: ...
    @property
    def prompt_style(self) -> str: ...
    @property
    def video_as_images(self) -> bool: ...


def encode_record(
    policy: LoadedModel,
    record: TaskRecord,
    media: DecodedVideo | None,
    think: bool,
    chat_template_kwargs: Mapping[str, Any] | None = None,
    style: str = "videorl",
    tools: Sequence[Mapping[str, Any]] = (),
    video_as_images: bool = False,
) -> PromptEncoding:
    """The record's family prompt (in prompt `style`; the record's own prompt and system
    turn when its row carries them, else the style's: `videoauto_r1`'s) with its decoded video (or image, T=1) as model input;
    the chat template gets `enable_thinking=think` unless `chat_template_kwargs` sets it.
    `tools` (function schemas, `ToolRunner.schemas`) are listed in the system turn;
    `video_as_images` gives the video as one image per frame (`data.video_as_images`)."""
    is_image = media is not None and record.video is None
    system, kwargs = tool_prompt_args(
        policy,
        tools,
        record.system or style_system(style),
        template_kwargs(think, chat_template_kwargs),
    )
    return encode_prompt(
        policy,
        build_prompt(record, think=think, style=style),
        video=None if is_image else media,
        image=media if is_image else None,
        system=system,
        template_kwargs=kwargs,
        video_as_images=video_as_images,
    )


class DecodedPrompts(NamedTuple):
    """The records of a step that decoded, their prompts and media; what was skipped."""

    records: list[TaskRecord]
    prompts: list[PromptEncoding]
    media: list[DecodedVideo | None]
    skipped_media: int  # media that failed to decode
    skipped_long: int  # prompts over data.max_prompt_tokens
    trimmed_long: int = 0  # prompts fitted to it by fewer frames (data.long_prompts: trim)


def decode_prompts(
    records: Sequence[TaskRecord],
    videos: MediaSource,
    policy: LoadedModel,
    data: DataConfig,
    tools: Sequence[Mapping[str, Any]] = (),
    frame_budgets: Sequence[int] = (),
) -> DecodedPrompts:
    """Decode each record's media once (`videos` caches it) and encode its prompt in the
    model family's coordinates, listing `tools` (function schemas) when given; bad media
    is skipped and counted, prompts over `data.max_prompt_tokens` skipped or trimmed to
    fewer frames (`data.long_prompts`, `prompt_budget.fit_prompt`) and counted.
    `frame_budgets` (training's `data.frame_budgets`): each video keeps its record's budget
    of frames (`video/frame_budget.py`)."""
    out = DecodedPrompts([], [], [], 0, 0)
    convention = model_convention(policy.model_type, data.coordinates)
    encode = record_encoder(policy, data, tools)
    for record in records:
        try:
            video = videos.get(record.media) if record.media is not None else None
        except MediaError as err:
            log.warning("skipping sample %s: %s", record.id, err)
            out = out._replace(skipped_media=out.skipped_media + 1)
            continue
        if frame_budgets and video is not None and record.video is not None:
            video = keep_frames(video, frame_budget(frame_budgets, record.id, data.seed))
        record = to_model_coordinates(record, convention, frame_size(video))
        fitted = fit_prompt(
            record, video, encode(record, video), encode, data.max_prompt_tokens, data.long_prompts
        )
        if fitted.prompt is None:
            out = out._replace(skipped_long=out.skipped_long + 1)
            continue
        out = out._replace(trimmed_long=out.trimmed_long + fitted.trimmed)
        out.records.append(record)
        out.media.append(fitted.media)
        out.prompts.append(fitted.prompt)
    return out


def record_encoder(
    policy: LoadedModel, data: PromptSettings, tools: Sequence[Mapping[str, Any]] = ()
) -> Encoder:
    """`encode_record` with the run's prompt settings (`data.think`, template kwargs, style,
    the tool list): what a stage calls to re-encode a record with other media (e.g.
    shuffled frames), and what inference prompts a checkpoint with."""

    def encode(record: TaskRecord, media: DecodedVideo | None) -> PromptEncoding:
        return encode_record(
            policy,
            record,
            media,
            data.think,
            data.chat_template_kwargs,
            style=data.prompt_style,
            tools=tools,
            video_as_images=data.video_as_images,
        )

    return encode
