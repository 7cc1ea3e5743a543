"""Tools in the chat: the tool list in the system turn and the tool turn's tokens and media.

Qwen's format (Qwen2.5, Qwen3, Qwen3-VL, Qwen3.5; Hermes): the system turn lists the tools
in `<tools>` and asks for `<tool_call>{"name", "arguments"}</tool_call>`; each tool result
goes back in a user turn as `<tool_response>\\n...\\n</tool_response>`. Where the chat
template itself renders `tools` and tool messages (Qwen3-VL, Qwen3.5), the template is used
(its output after the preceding assistant turn); where it does not (the Qwen2.5-VL
processor template, videorl's tiny models), the same text is written here.

A tool turn's images and clips go into that turn as media (`<|vision_start|><|image_pad|>
<|vision_end|>` after the result text), expanded and encoded by the processor exactly as a
prompt's media are; the turn is context only (loss mask 0).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from videorl.models.chat_template import used_by_template
from videorl.models.inputs import VISION_KEYS, hf_video_metadata, video_processor_kwargs
from videorl.models.loaded import LoadedModel
from videorl.rollout.tools.runner import ToolOutcome
from videorl.video.decode import DecodedVideo

DEFAULT_SYSTEM = "You are a helpful assistant."
END_OF_TURN = "<|im_end|>"
TOOLS_HEADER = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
TOOLS_FOOTER = (
    "\n</tools>\n\nFor each function call, return a json object with function name and "
    "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
)
VISION = {
    "image": "<|vision_start|><|image_pad|><|vision_end|>",
    "video": "<|vision_start|><|video_pad|><|vision_end|>",
}


def _template_source(loaded: LoadedModel) -> str:
    owner = loaded.processor or loaded.tokenizer
    template = getattr(owner, "chat_template", None)
    return " ".join(template.values()) if isinstance(template, dict) else (template or "")


def template_renders_tools(loaded: LoadedModel) -> bool:
    """Whether the model's chat template renders `tools` and tool messages itself."""
    source = _template_source(loaded)
    return "tools" in source and "tool_response" in source


def tools_system_text(schemas: Sequence[Mapping[str, Any]], system: str | None = None) -> str:
    """The system turn with Qwen's tool list (what Qwen2.5's template writes for `tools`)."""
    listed = "".join("\n" + json.dumps(s, ensure_ascii=False) for s in schemas)
    return f"{system or DEFAULT_SYSTEM}\n\n{TOOLS_HEADER}{listed}{TOOLS_FOOTER}"


def tool_prompt_args(
    loaded: LoadedModel,
    schemas: Sequence[Mapping[str, Any]],
    system: str | None,
    template_kwargs: Mapping[str, Any] | None,
) -> tuple[str | None, dict[str, Any]]:
    """`(system, template_kwargs)` for `encode_prompt` that put the tools into the prompt:
    the template's own `tools` variable where it renders it, else the system text."""
    kwargs = dict(template_kwargs or {})
    if not schemas:
        return system, kwargs
    if template_renders_tools(loaded):
        return system, {**kwargs, "tools": [dict(s) for s in schemas]}
    return tools_system_text(schemas, system), kwargs


def _kind(media: DecodedVideo) -> str:
    return "image" if media.meta is None or media.meta.is_image else "video"


def tool_turn_text(
    loaded: LoadedModel,
    outcomes: Sequence[ToolOutcome],
    *,
    close_turn: bool,
    template_kwargs: Mapping[str, Any] | None = None,
) -> str:
    """The text after an assistant turn that made `outcomes`' calls, up to and including the
    next assistant generation prompt. `close_turn`: the response did not end with EOS, so
    the turn is closed here (`<|im_end|>`) as context."""
    eos = END_OF_TURN
    head = eos if close_turn else ""
    if not template_renders_tools(loaded):
        parts = []
        for outcome in outcomes:
            media = "".join(VISION[_kind(m)] for m in outcome.media)
            parts.append(f"\n<tool_response>\n{outcome.text}{media}\n</tool_response>")
        return f"{head}\n<|im_start|>user{''.join(parts)}<|im_end|>\n<|im_start|>assistant\n"
    marker = "\x00videorl-turn\x00"
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "?"},
        {"role": "assistant", "content": marker},
    ]
    for outcome in outcomes:
        content = [{"type": "text", "text": outcome.text}]
        content += [{"type": _kind(m)} for m in outcome.media]
        messages.append({"role": "tool", "content": content})
    owner = loaded.processor or loaded.tokenizer
    kwargs = used_by_template(dict(template_kwargs or {}), owner)
    full = owner.apply_chat_template(messages, add_generation_prompt=True, tokenize=False, **kwargs)
    cut = full.index(marker) + len(marker)
    rest = full[cut:]
    if not rest.startswith(eos):
        raise ValueError(f"the chat template does not close an assistant turn with {eos!r}")
    return head + rest[len(eos) :]


@dataclass(frozen=True)
class TurnEncoding:
    """A tool turn as model input: its tokens, token types and the vision tensors of its
    media (in the processor's layout), and the media themselves in order. `template_ids`
    are its tokens before the processor expanded the media placeholders (one per item, what
    the vLLM engine sends; `PromptSource`); None where it has no media (`input_ids`)."""

    input_ids: torch.Tensor  # [L] long
    mm_token_type_ids: torch.Tensor  # [L] int
    vision: dict[str, torch.Tensor] = field(default_factory=dict)
    media: tuple[DecodedVideo, ...] = ()
    template_ids: torch.Tensor | None = None  # [L0] long


def encode_tool_turn(loaded: LoadedModel, text: str, media: Sequence[DecodedVideo]) -> TurnEncoding:
    """Tokenize `text` (from `tool_turn_text`) and encode its media with the processor, as
    `encode_prompt` does for a prompt's media (frames as decoded, their true timing)."""
    videos = [m for m in media if _kind(m) == "video"]
    images = [m for m in media if _kind(m) == "image"]
    if loaded.processor is None or not media:
        ids = loaded.tokenizer(text, add_special_tokens=False)["input_ids"]
        input_ids = torch.tensor(ids, dtype=torch.long)
        return TurnEncoding(input_ids, torch.zeros_like(input_ids, dtype=torch.int32))
    kwargs: dict[str, Any] = {"text": [text], "return_tensors": "pt"}
    if videos:
        kwargs["videos"] = [v.frames for v in videos]
        kwargs["video_metadata"] = [
            hf_video_metadata(v.meta, int(v.frames.shape[0])) for v in videos
        ]
        kwargs["do_sample_frames"] = False
        kwargs.update(video_processor_kwargs(loaded.processor))
    if images:
        kwargs["images"] = [i.frames[0] for i in images]
    encoded = loaded.processor(**kwargs)
    input_ids = encoded["input_ids"][0]
    types = encoded.get("mm_token_type_ids")
    return TurnEncoding(
        input_ids=input_ids,
        mm_token_type_ids=torch.zeros_like(input_ids, dtype=torch.int32)
        if types is None
        else torch.as_tensor(types[0]).to(torch.int32),
        vision={k: torch.as_tensor(encoded[k]) for k in VISION_KEYS if k in encoded},
        media=tuple(media),
        template_ids=torch.tensor(
            loaded.tokenizer(text, add_special_tokens=False)["input_ids"], dtype=torch.long
        ),
    )
