"""A task record plus its decoded media, as the policy's prompt encoding."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from videorl.data.prompts import build_prompt
from videorl.data.records import TaskRecord
from videorl.models.chat_template import template_kwargs
from videorl.models.inputs import PromptEncoding, encode_prompt
from videorl.models.loading import LoadedModel


def encode_record(
    policy: LoadedModel,
    record: TaskRecord,
    media: Any,
    think: bool,
    chat_template_kwargs: Mapping[str, Any] | None = None,
    style: str = "videorl",
) -> PromptEncoding:
    """The record's family prompt (in prompt `style`) with its decoded video (or image, T=1)
    as model input; the chat template gets `enable_thinking=think` unless
    `chat_template_kwargs` sets it."""
    is_image = media is not None and record.video is None
    return encode_prompt(
        policy,
        build_prompt(record, think=think, style=style),
        video=None if is_image else media,
        image=media if is_image else None,
        template_kwargs=template_kwargs(think, chat_template_kwargs),
    )
