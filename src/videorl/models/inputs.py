"""Prompt encodings and batched model inputs (prompt left-padded, response right-padded).

A prompt is encoded once (`PromptEncoding`: its token ids and its vision tensors) and reused
by generation, log-prob recomputation, the update and the sensitivity passes, so the video
features in the loss are exactly those of the rollout (docs/methods.md#video-contract).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import torch

from videorl.models.chat_template import used_by_template

if TYPE_CHECKING:
    from videorl.models.loaded import LoadedModel
    from videorl.video.decode import DecodedVideo

# Per-video / per-image tensors concatenated across rows (the processor's layout).
VISION_KEYS = (
    "pixel_values_videos",
    "video_grid_thw",
    "second_per_grid_ts",
    "pixel_values",
    "image_grid_thw",
)


@dataclass(frozen=True)
class PromptSource:
    """What a prompt was encoded from, for engines that run the processor themselves (vLLM):
    the chat-templated token ids *before* the processor expanded the vision placeholders (one
    `<|video_pad|>` / `<|image_pad|>` per item, plus any forced prefix), and the decoded media
    the processor was given (the same frames and metadata: decode once). A multi-turn context
    (`rollout/multiturn.py`) adds its tool turns' media, each with one placeholder in
    `token_ids`, after the prompt's."""

    token_ids: torch.Tensor  # [L0] long
    video: DecodedVideo | None = None
    image: DecodedVideo | None = None  # T = 1
    tool_media: tuple[DecodedVideo, ...] = ()  # the tool turns' videos and images, in order
    video_as_images: bool = False  # `video`'s frames went in as images, one placeholder each


@dataclass(frozen=True)
class PromptEncoding:
    """One prompt as the model sees it: token ids, token types and vision tensors."""

    input_ids: torch.Tensor  # [L] long
    mm_token_type_ids: torch.Tensor | None = None  # [L] int
    vision: dict[str, torch.Tensor] = field(default_factory=dict)
    source: PromptSource | None = None

    @property
    def length(self) -> int:
        return int(self.input_ids.numel())


def hf_video_metadata(meta: Any, num_frames: int) -> Any:
    """The `VideoMetadata` the processor gets for `meta`'s frames (`meta.time_encoding`).

    `sampled` (the default): the *actual* sampled fps and the true timestamps. Qwen2.5-VL
    derives `second_per_grid_ts = temporal_patch / sampled_fps` with `sampled_fps =
    len(frames_indices) / total_num_frames * fps`; Qwen3-VL writes `frames_indices[i] / fps`
    into the text. We express indices relative to the clip start at the source fps, so both
    equal what was really sampled (docs/methods.md#video-contract).

    `processor_default`: what the processor assumed when given no fps in the transformers
    Video-R1 trained with: frame i of `num_frames` at `i / PROCESSOR_DEFAULT_FPS` (2 fps), so
    `second_per_grid_ts = 2 / 2 = 1.0` whatever the real sampling (docs/fidelity.md, T-GRPO).
    """
    from transformers.video_utils import VideoMetadata

    from videorl.video.meta import PROCESSOR_DEFAULT_FPS

    width, height = getattr(meta, "width", None), getattr(meta, "height", None)
    if getattr(meta, "time_encoding", "sampled") == "processor_default":
        return VideoMetadata(
            total_num_frames=num_frames,
            fps=PROCESSOR_DEFAULT_FPS,
            frames_indices=list(range(num_frames)),
            duration=num_frames / PROCESSOR_DEFAULT_FPS,
            width=width,
            height=height,
        )
    source_fps = float(meta.source_fps)
    indices = [round(t * source_fps) for t in meta.timestamps]
    clip_seconds = num_frames / float(meta.fps)
    return VideoMetadata(
        total_num_frames=max(1, round(clip_seconds * source_fps)),
        fps=source_fps,
        frames_indices=indices,
        duration=clip_seconds,
        width=width,
        height=height,
    )


PLACEHOLDERS = {"video": "<video>", "image": "<image>"}


def chat_messages(
    text: str, *, video: bool = False, image: bool = False, system: str | None = None
) -> list[dict]:
    """One user turn: the media, then `text`; where `text` holds the media's placeholder
    (`<video>` / `<image>`, a row's own prompt: verl, EasyR1, TaRO) the media goes there
    instead, as those trainers split it (`text.split("<video>")`, empty pieces dropped)."""
    kinds = [kind for kind, wanted in (("image", image), ("video", video)) if wanted]
    markers = {PLACEHOLDERS[kind]: kind for kind in kinds if PLACEHOLDERS[kind] in text}
    content: list[dict[str, str]] = [
        {"type": kind} for kind in kinds if PLACEHOLDERS[kind] not in markers
    ]
    if not markers:
        content.append({"type": "text", "text": text})
    for piece in re.split("(" + "|".join(map(re.escape, markers)) + ")", text) if markers else ():
        if piece in markers:
            content.append({"type": markers[piece]})
        elif piece:
            content.append({"type": "text", "text": piece})
    messages = [{"role": "system", "content": system}] if system else []
    return messages + [{"role": "user", "content": content}]


def video_processor_kwargs(processor: Any) -> dict[str, Any]:
    """`cap_pixels_per_frame=True` where the video processor takes it (transformers >= 5.2x):
    qwen-vl-utils' per-frame cap, the behaviour transformers is moving to; it silences its
    FutureWarning. Frames arrive already resized within `video.max_pixels`, under that cap,
    so the vision tokens are those of the uncapped default (tests/models/test_video_cap.py)."""
    video_processor = getattr(processor, "video_processor", None)
    return (
        {"cap_pixels_per_frame": True} if hasattr(video_processor, "cap_pixels_per_frame") else {}
    )


def encode_prompt(
    loaded: LoadedModel,
    text: str,
    *,
    video: DecodedVideo | None = None,
    image: DecodedVideo | None = None,
    system: str | None = None,
    template_kwargs: dict[str, Any] | None = None,
    video_as_images: bool = False,
) -> PromptEncoding:
    """Encode one user prompt (with a decoded video/image: `.frames` uint8 [T,C,H,W], `.meta`).
    `template_kwargs` go to the chat template (`enable_thinking`, see `chat_template`).
    `video_as_images`: the video's T frames go in as T images where the video would stand
    (LongVT's `data.sglang_video`), each through the image processor."""
    messages = chat_messages(text, video=video is not None, image=image is not None, system=system)
    if video is not None and video_as_images:
        messages = _frames_as_images(messages, int(video.frames.shape[0]))
    template_kwargs = used_by_template(template_kwargs or {}, loaded.processor or loaded.tokenizer)
    if loaded.processor is None:
        if video is not None or image is not None:
            raise ValueError("this model is text-only; it cannot take a video or image prompt")
        ids = loaded.tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, tokenize=True, **template_kwargs
        )
        ids = ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids
        input_ids = torch.tensor(ids, dtype=torch.long).flatten()
        return PromptEncoding(input_ids=input_ids, source=PromptSource(token_ids=input_ids))
    prompt = loaded.processor.apply_chat_template(
        messages, add_generation_prompt=True, tokenize=False, **template_kwargs
    )
    kwargs: dict[str, Any] = {"text": [prompt], "return_tensors": "pt"}
    if video is not None and video_as_images:
        kwargs["images"] = list(video.frames)
    elif video is not None:
        kwargs["videos"] = [video.frames]
        kwargs["video_metadata"] = [hf_video_metadata(video.meta, int(video.frames.shape[0]))]
        kwargs["do_sample_frames"] = False
        kwargs.update(video_processor_kwargs(loaded.processor))
    if image is not None:
        kwargs["images"] = [image.frames[0]]
    encoded = loaded.processor(**kwargs)
    vision = {k: torch.as_tensor(encoded[k]) for k in VISION_KEYS if k in encoded}
    token_types = encoded.get("mm_token_type_ids")
    template_ids = loaded.tokenizer(prompt, add_special_tokens=False)["input_ids"]
    return PromptEncoding(
        input_ids=encoded["input_ids"][0],
        mm_token_type_ids=None if token_types is None else token_types[0],
        vision=vision,
        source=PromptSource(
            token_ids=torch.tensor(template_ids, dtype=torch.long),
            video=video,
            image=image,
            video_as_images=video is not None and video_as_images,
        ),
    )


def _frames_as_images(messages: list[dict], frames: int) -> list[dict]:
    """`messages` with the user turn's video entry replaced by `frames` image entries."""
    *head, user = messages
    content: list[dict[str, str]] = []
    for part in user["content"]:
        content += [{"type": "image"}] * frames if part.get("type") == "video" else [part]
    return [*head, {**user, "content": content}]


def with_prefix(prompt: PromptEncoding, prefix_ids: torch.Tensor) -> PromptEncoding:
    """The prompt followed by forced tokens (used to generate a continuation of a prefix)."""
    types = None
    if prompt.mm_token_type_ids is not None:
        types = torch.cat(
            [
                prompt.mm_token_type_ids,
                torch.zeros_like(prefix_ids, dtype=prompt.mm_token_type_ids.dtype),
            ]
        )
    source = prompt.source
    if source is not None:
        source = replace(source, token_ids=torch.cat([source.token_ids, prefix_ids]))
    return replace(
        prompt,
        input_ids=torch.cat([prompt.input_ids, prefix_ids]),
        mm_token_type_ids=types,
        source=source,
    )


def collate(
    prompts: Sequence[PromptEncoding],
    responses: Sequence[torch.Tensor] | None,
    pad_id: int,
    response_token_types: Sequence[torch.Tensor] | None = None,
) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """Batch rows as [left-padded prompt | right-padded response].

    Returns the model inputs and the response mask [B, R] (R = longest response; 0 when
    `responses` is None). Vision tensors of the rows are concatenated in row order.
    `response_token_types` (multi-turn rows, `rollout/multiturn.py`) are the token types of
    each response, whose tool turns hold media; by default responses are text (0).
    """
    batch = len(prompts)
    prompt_len = max(p.length for p in prompts)
    responses = (
        list(responses) if responses is not None else [torch.zeros(0, dtype=torch.long)] * batch
    )
    response_len = max((int(r.numel()) for r in responses), default=0)
    total = prompt_len + response_len
    input_ids = torch.full((batch, total), pad_id, dtype=torch.long)
    attention = torch.zeros((batch, total), dtype=torch.long)
    response_mask = torch.zeros((batch, response_len), dtype=torch.float32)
    has_types = any(p.mm_token_type_ids is not None for p in prompts) or bool(response_token_types)
    types = torch.zeros((batch, total), dtype=torch.int32) if has_types else None
    for i, (prompt, response) in enumerate(zip(prompts, responses, strict=True)):
        start = prompt_len - prompt.length
        input_ids[i, start:prompt_len] = prompt.input_ids
        attention[i, start:prompt_len] = 1
        n = int(response.numel())
        input_ids[i, prompt_len : prompt_len + n] = response
        attention[i, prompt_len : prompt_len + n] = 1
        response_mask[i, :n] = 1.0
        if types is not None and prompt.mm_token_type_ids is not None:
            types[i, start:prompt_len] = prompt.mm_token_type_ids
        if types is not None and response_token_types is not None:
            types[i, prompt_len : prompt_len + n] = response_token_types[i][:n]
    inputs: dict[str, torch.Tensor] = {"input_ids": input_ids, "attention_mask": attention}
    if types is not None:
        inputs["mm_token_type_ids"] = types
    for key in VISION_KEYS:
        parts = [p.vision[key] for p in prompts if key in p.vision]
        if parts:
            inputs[key] = torch.cat(parts, dim=0)
    return inputs, response_mask
