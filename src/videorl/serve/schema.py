"""The chat-completions request `videorl serve` accepts: pydantic models, strict JSON.

The fields are OpenAI's and vLLM's (`mm_processor_kwargs`), plus videorl's `video_metadata`
(the timing of per-frame images; see `eval.openai_backend`). Validation is strict: no
coercion (`"2"` is not a number, `1.0` is not an integer, `true` is not 1), no NaN or
infinity, and any field this server does not implement is rejected by name rather than
ignored. `parse_request` turns the raw body into a `ChatRequest` or a `RequestError` with a
one-line message.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

MAX_MESSAGES = 16
MAX_PARTS = 64


class RequestError(ValueError):
    """A request the server refuses: HTTP `status` (4xx) with a one-line `message`."""

    def __init__(self, message: str, status: int = 400, param: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.param = param


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False, frozen=True)


class MediaURL(_Strict):
    url: Annotated[str, Field(min_length=1)]
    detail: Literal["auto", "low", "high"] | None = None  # OpenAI's image detail; unused


class TextPart(_Strict):
    type: Literal["text"]
    text: str


class VideoPart(_Strict):
    type: Literal["video_url"]
    video_url: MediaURL


class ImagePart(_Strict):
    type: Literal["image_url"]
    image_url: MediaURL


Part = Annotated[TextPart | VideoPart | ImagePart, Field(discriminator="type")]


class Message(_Strict):
    role: Literal["system", "user", "assistant"]
    content: str | Annotated[list[Part], Field(min_length=1, max_length=MAX_PARTS)] | None = None
    name: str | None = None


class StreamOptions(_Strict):
    include_usage: bool = False


class ProcessorKwargs(_Strict):
    """vLLM's `mm_processor_kwargs`: the sampled fps of the frames sent."""

    fps: Annotated[float, Field(gt=0, le=240)] | None = None
    do_sample_frames: bool | None = None


class VideoMetadata(_Strict):
    """Timing of per-frame images (`eval.openai_backend.video_metadata`)."""

    fps: Annotated[float, Field(gt=0, le=240)] | None = None
    timestamps: list[Annotated[float, Field(ge=0)]] | None = None
    frame_indices: list[Annotated[int, Field(ge=0)]] | None = None
    source_fps: Annotated[float, Field(gt=0, le=1000)] | None = None
    duration: Annotated[float, Field(ge=0)] | None = None


class ChatRequest(_Strict):
    """An OpenAI/vLLM chat-completions request (the subset this server implements)."""

    model: str
    messages: Annotated[list[Message], Field(min_length=1, max_length=MAX_MESSAGES)]
    max_tokens: Annotated[int, Field(ge=1)] | None = None
    max_completion_tokens: Annotated[int, Field(ge=1)] | None = None
    temperature: Annotated[float, Field(ge=0, le=2)] | None = None
    top_p: Annotated[float, Field(gt=0, le=1)] | None = None
    top_k: Annotated[int, Field(ge=0)] | None = None
    n: Annotated[int, Field(ge=1)] = 1
    stream: bool = False
    stream_options: StreamOptions | None = None
    seed: Annotated[int, Field(ge=0, lt=2**63)] | None = None
    user: str | None = None
    mm_processor_kwargs: ProcessorKwargs | None = None
    video_metadata: Annotated[list[VideoMetadata], Field(max_length=1)] | None = None
    # chat-template variables, as vLLM takes them (`enable_thinking`); checked by the service
    chat_template_kwargs: dict[str, Any] | None = None


SUPPORTED_FIELDS = tuple(ChatRequest.model_fields)
_PART_TAGS = ("text", "video_url", "image_url")


def _no_constant(name: str) -> Any:
    raise RequestError(f"the body holds {name}, which is not valid JSON; send a finite number")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise RequestError(f"the number {text[:40]} is out of range; send a finite number")
    return value


def _location(loc: tuple[Any, ...]) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path


def describe(error: ValidationError) -> tuple[str, str]:
    """(one-line message, offending parameter) for the deepest problem pydantic found (in a
    union, the branch that got furthest)."""
    errors = error.errors(include_url=False)
    _, first = max(enumerate(errors), key=lambda item: (len(item[1]["loc"]), item[0]))
    # Union branch labels ('str', 'list[...]', a part's tag after its index) are not part
    # of the path.
    loc: list[Any] = []
    raw = first["loc"]
    for i, part in enumerate(raw):
        after_index = i > 0 and isinstance(raw[i - 1], int)
        if part == "str" or "[" in str(part) or (after_index and part in _PART_TAGS):
            continue
        loc.append(part)
    where = _location(tuple(loc)) or "body"
    if first["type"] == "extra_forbidden" and len(loc) == 1:
        message = (
            f"unsupported field {where!r}: this server implements "
            f"{', '.join(SUPPORTED_FIELDS)}; drop it"
        )
    elif first["type"] == "extra_forbidden":
        message = f"unsupported field {loc[-1]!r} in {_location(tuple(loc[:-1]))}; drop it"
    elif first["type"] == "missing":
        message = f"{where} is required"
    else:
        got = json.dumps(first.get("input"), default=str)
        got = got if len(got) <= 60 else got[:57] + "..."
        message = f"{where}: {first['msg']} (got {got})"
    return message, where


def parse_request(body: bytes) -> ChatRequest:
    """Validate a raw JSON body as a `ChatRequest`; a `RequestError` otherwise."""
    try:
        data = json.loads(body, parse_constant=_no_constant, parse_float=_finite_float)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as err:
        raise RequestError(f"the body is not valid JSON ({err}); send a JSON object") from None
    if not isinstance(data, dict):
        raise RequestError("the body must be a JSON object with 'model' and 'messages'")
    try:
        return ChatRequest.model_validate(data)
    except ValidationError as err:
        message, where = describe(err)
        raise RequestError(message, param=where) from None
