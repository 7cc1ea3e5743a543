"""`ChatService`: a validated chat request -> prompt encoding -> queued generation -> answer.

The conversation is one user turn, optionally after system messages (more turns are
refused, not dropped). Its text parts are joined by newlines (a media part after text stands
where it was sent, `user_text`) and encoded with the media by
`models.inputs.encode_prompt`, the function in-process generation and eval use, so the
served model sees exactly the tokens and frames it would see in-process. Sampling follows
the request: `temperature` (0 = greedy; OpenAI's default 1), `top_p`, `top_k`, `n`,
`max_tokens` (at most `limits.max_new_tokens`), `seed`. Every completion and chunk also
carries `input_fingerprint`, the digest of the input the model was given (token ids, grids,
frame timestamps, pixels: `models/fingerprint.py`), the one training and eval record for it.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from videorl.errors import ConfigError, VideoRLError
from videorl.models.generate import Generation, SamplingParams
from videorl.models.inputs import PromptEncoding
from videorl.serve.media import MediaPolicy, image_of, video_of
from videorl.serve.schema import ChatRequest, ImagePart, Message, RequestError, TextPart

if TYPE_CHECKING:
    from videorl.inference import RunSettings
    from videorl.serve.limits import ServeLimits

# Held back while streaming: an incomplete UTF-8 sequence decodes to this.
_REPLACEMENT = "\ufffd"


def _text(message: Message, where: str) -> str:
    if isinstance(message.content, str):
        return message.content
    texts = [p.text for p in message.content or () if isinstance(p, TextPart)]
    if message.content is None or len(texts) != len(message.content):
        raise RequestError(f"{where} must hold text only")
    return "\n".join(texts)


def split_conversation(request: ChatRequest) -> tuple[str | None, Message]:
    """(system text, the user message) of a one-turn conversation."""
    *head, last = request.messages
    if last.role != "user" or any(m.role != "system" for m in head):
        raise RequestError(
            "send one user message, optionally after system messages; multi-turn "
            "conversations are not supported by this server",
            param="messages",
        )
    system = "\n".join(_text(m, f"messages[{i}]") for i, m in enumerate(head)) or None
    return system, last


def user_text(parts: list[Any]) -> str:
    """The user text of a message's parts: text parts joined by newlines; a media part that
    follows text is put back as its placeholder (`<video>` / `<image>`), so
    `models.inputs.chat_messages` puts the media there again, as a client that split a
    record's own prompt at it sent it (`eval.openai_backend.chat_request`). Media first
    needs no placeholder: it is where `chat_messages` puts media by default."""
    from videorl.models.inputs import PLACEHOLDERS

    pieces: list[str] = []
    previous_text = False
    for part in parts:
        if isinstance(part, str | TextPart):
            text = part if isinstance(part, str) else part.text
            pieces.append(("\n" if previous_text else "") + text)
            previous_text = True
        else:
            if pieces:
                pieces.append(PLACEHOLDERS["image" if isinstance(part, ImagePart) else "video"])
            previous_text = False
    return "".join(pieces)


@dataclass(frozen=True)
class Prompt:
    """What a request asks: the encoded prompt and its sampling settings."""

    encoding: PromptEncoding
    params: SamplingParams
    seed: int | None
    input_fingerprint: str = ""  # the digest of what the model is given (models/fingerprint.py)


class ChatService:
    """A loaded checkpoint behind the chat-completions API."""

    def __init__(
        self,
        loaded: Any,
        served_model: str,
        policy: MediaPolicy,
        template_defaults: Mapping[str, Any] | None = None,
    ) -> None:
        self.loaded = loaded
        self.served_model = served_model
        self.policy = policy
        # chat-template variables of the checkpoint's training run; a request's own win
        self.template_defaults = dict(template_defaults or {})

    @classmethod
    def for_run(
        cls,
        loaded: Any,
        served_model: str,
        run: RunSettings,
        limits: ServeLimits,
        media_root: Path | None = None,
    ) -> ChatService:
        """The service of a checkpoint with its run's settings (`inference.RunSettings`):
        MP4s and media paths sampled with its video settings, its think mode and template
        variables as the chat template's defaults. The prompt text is the client's."""
        return cls(
            loaded,
            served_model,
            MediaPolicy(video=run.video, limits=limits, media_root=media_root),
            template_defaults=run.template_kwargs(),
        )

    def template_kwargs(self, request: ChatRequest) -> dict[str, Any]:
        """The run's template variables updated with the request's (checked: a bad one is
        a 400)."""
        from videorl.models.chat_template import check_template_kwargs

        try:
            asked = check_template_kwargs(request.chat_template_kwargs, "chat_template_kwargs")
        except ConfigError as err:
            raise RequestError(str(err), param="chat_template_kwargs") from None
        return {**self.template_defaults, **asked}

    def check_model(self, request: ChatRequest) -> None:
        if request.model != self.served_model:
            raise RequestError(
                f"model {request.model!r} is not served here; this server serves "
                f"{self.served_model!r} (see /v1/models)",
                param="model",
            )

    def sampling(self, request: ChatRequest) -> SamplingParams:
        """`SamplingParams` of a request; values past the server's limits are refused."""
        limits = self.policy.limits
        max_tokens = request.max_tokens or request.max_completion_tokens or limits.max_new_tokens
        if max_tokens > limits.max_new_tokens:
            raise RequestError(
                f"max_tokens={max_tokens} is over this server's limit {limits.max_new_tokens} "
                "(--max-new-tokens); ask for fewer",
                param="max_tokens",
            )
        if request.n > limits.max_n:
            raise RequestError(
                f"n={request.n} is over this server's limit {limits.max_n} (--max-n)", param="n"
            )
        return SamplingParams(
            n=request.n,
            max_new_tokens=max_tokens,
            temperature=1.0 if request.temperature is None else request.temperature,
            top_p=1.0 if request.top_p is None else request.top_p,
            top_k=request.top_k or 0,
        )

    def prompt(self, request: ChatRequest) -> Prompt:
        """Decode the media and encode the prompt (CPU work: run it off the event loop)."""
        from videorl.models.fingerprint import fingerprint
        from videorl.models.inputs import encode_prompt

        params = self.sampling(request)
        system, user = split_conversation(request)
        parts = [user.content] if isinstance(user.content, str) else list(user.content or [])
        media = [p for p in parts if not isinstance(p, str | TextPart)]
        if len(media) > 1:
            raise RequestError("send at most one video_url or image_url part per request")
        video = image = None
        first = media[0] if media else None
        try:
            if isinstance(first, ImagePart):
                image = image_of(first, self.policy)
            elif first is not None:
                video = video_of(first, request, self.policy)
        except VideoRLError as err:  # e.g. a corrupt file under --media-root
            raise RequestError(str(err)) from None
        if (video is not None or image is not None) and self.loaded.processor is None:
            raise RequestError(f"{self.served_model!r} is text-only; send no video or image")
        encoding = encode_prompt(
            self.loaded,
            user_text(parts),
            video=video,
            image=image,
            system=system,
            template_kwargs=self.template_kwargs(request),
        )
        seen = fingerprint(encoding, [video or image]).digest
        return Prompt(encoding=encoding, params=params, seed=request.seed, input_fingerprint=seen)

    def _choices(self, generation: Generation) -> list[tuple[str, str, int]]:
        """(text, finish reason, token count) of each sampled response."""
        decode = self.loaded.tokenizer.decode
        return [
            (decode(ids, skip_special_tokens=True), "length" if cut else "stop", int(ids.numel()))
            for ids, cut in zip(generation.token_ids, generation.truncated, strict=True)
        ]

    def completion(self, prompt: Prompt, generation: Generation) -> dict[str, Any]:
        """The `chat.completion` object."""
        choices = self._choices(generation)
        used = sum(count for *_, count in choices)
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.served_model,
            "input_fingerprint": prompt.input_fingerprint,
            "choices": [
                {
                    "index": i,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": reason,
                }
                for i, (text, reason, _) in enumerate(choices)
            ],
            "usage": {
                "prompt_tokens": prompt.encoding.length,
                "completion_tokens": used,
                "total_tokens": prompt.encoding.length + used,
            },
        }

    def chunks(
        self, prompt: Prompt, generation: Generation, include_usage: bool
    ) -> Iterator[dict[str, Any]]:
        """`chat.completion.chunk` objects: per choice a role chunk, one content delta per
        token (bytes of a split character held back), a finish chunk; then usage if asked.
        The deltas of a choice concatenate to its non-streamed content."""
        head = {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": self.served_model,
            "input_fingerprint": prompt.input_fingerprint,
        }

        def chunk(index: int, delta: dict[str, str], reason: str | None = None) -> dict:
            choice = {"index": index, "delta": delta, "finish_reason": reason}
            return {**head, "choices": [choice]}

        decode = self.loaded.tokenizer.decode
        used = 0
        for index, (ids, (text, reason, count)) in enumerate(
            zip(generation.token_ids, self._choices(generation), strict=True)
        ):
            used += count
            yield chunk(index, {"role": "assistant", "content": ""})
            sent = ""
            for end in range(1, count + 1):
                partial = decode(ids[:end], skip_special_tokens=True)
                if partial.endswith(_REPLACEMENT) or not partial.startswith(sent):
                    continue
                if len(partial) > len(sent):
                    yield chunk(index, {"content": partial[len(sent) :]})
                    sent = partial
            if text.startswith(sent) and len(text) > len(sent):
                yield chunk(index, {"content": text[len(sent) :]})
            yield chunk(index, {}, reason)
        if include_usage:
            length = prompt.encoding.length
            usage = {"prompt_tokens": length, "completion_tokens": used}
            yield {**head, "choices": [], "usage": {**usage, "total_tokens": length + used}}

    def models(self) -> dict[str, Any]:
        return {
            "object": "list",
            "data": [{"id": self.served_model, "object": "model", "owned_by": "videorl"}],
        }
