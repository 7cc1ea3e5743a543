"""The dry-run plan's sequence-parallel line (`model.sequence_parallel_size` S > 1): the
longest row's tokens, the tokens per rank (that / S, rounded up) and an estimate of the
decoder layers' activation memory per rank in the update."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from videorl.config.schema import Config
from videorl.errors import ConfigError

TEMPORAL_PATCH = 2  # frames per visual token of Qwen2.5-VL / Qwen3-VL


@dataclass(frozen=True)
class TextShape:
    """The text model's sizes that its activations scale with."""

    layers: int
    hidden: int
    intermediate: int
    kv_width: int  # KV heads x head size

    @classmethod
    def of(cls, config: Any) -> TextShape:
        """From a transformers config (a vision-language one's `text_config`)."""
        text = getattr(config, "text_config", None) or config
        head = getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads
        return cls(
            layers=text.num_hidden_layers,
            hidden=text.hidden_size,
            intermediate=text.intermediate_size,
            kv_width=text.num_key_value_heads * head,
        )


def longest_row_tokens(config: Config) -> int:
    """The longest row: `data.max_prompt_tokens` when set, else the most visual tokens a
    video can have (min(max_frames x max_pixels, total_pixels) pixels, one token per
    factor x factor pixels of 2 frames; the prompt's text not counted), plus the response
    budget."""
    video = config.video
    if config.data.max_prompt_tokens is not None:
        prompt = config.data.max_prompt_tokens
    else:
        pixels = min(video.max_frames * video.max_pixels, video.total_pixels)
        prompt = pixels // (video.factor**2 * TEMPORAL_PATCH)
    return prompt + config.rollout.response_budget


def activation_bytes(shape: TextShape, tokens: int, dtype_bytes: int, checkpointed: bool) -> int:
    """Activations the update's backward keeps for `tokens` tokens on one rank.

    Per token and decoder layer a layer saves its input and normed input (2h), q, k and v
    (h + 2 kv), the attention output (h), the MLP's input and normed input (2h), and the
    gate, up, activated-gate and product tensors (4 I): (6h + 2kv + 4I) x dtype bytes
    (Korthikanti et al. 2022's count for a SwiGLU MLP; flash/sdpa attention keeps no L x L
    scores). With gradient checkpointing each layer keeps its input (h) and one layer at a
    time is recomputed whole. The LM head, the logits and the vision tower are not counted.
    """
    per_layer = 6 * shape.hidden + 2 * shape.kv_width + 4 * shape.intermediate
    if checkpointed:
        return tokens * dtype_bytes * (shape.layers * shape.hidden + per_layer)
    return tokens * dtype_bytes * shape.layers * per_layer


def _text_shape(config: Config) -> tuple[TextShape | None, Any]:
    """The policy's text-model shape and transformers config, or (None, None) when its
    config cannot be read (a Hub id not in the cache, offline)."""
    try:
        from transformers import AutoConfig

        from videorl.models.loading import model_folder

        hf = AutoConfig.from_pretrained(model_folder(config.model.path, config.model.revision))
        return TextShape.of(hf), hf
    except (ConfigError, OSError, ValueError, AttributeError):
        return None, None


def sequence_parallel_summary(config: Config) -> str | None:
    """The longest row's tokens per rank and the activation memory per rank of the largest
    micro-batch (max(optim.micro_batch_tokens, longest row) tokens, split over S), or None
    for S = 1. Heads that do not split over S: the same one-line `ConfigError` as at start."""
    size = config.model.sequence_parallel_size
    if size == 1:
        return None
    longest = longest_row_tokens(config)
    line = f"longest row ~{longest} tokens / {size} = {math.ceil(longest / size)} per rank"
    shape, hf = _text_shape(config)
    if shape is None:
        return f"{line}; activation memory unknown (model config not readable)"
    from types import SimpleNamespace

    from videorl.models.sequence_parallel import check_splittable

    try:
        check_splittable(SimpleNamespace(config=hf), size)  # type: ignore[arg-type]
    except ValueError as err:
        raise ConfigError(str(err)) from None
    tokens = math.ceil(max(longest, config.optim.micro_batch_tokens) / size)
    wide = config.model.dtype != "float32" or config.trainer.bf16  # bf16 autocast on a GPU
    checkpointed = config.model.gradient_checkpointing
    memory = activation_bytes(shape, tokens, 2 if wide else 4, checkpointed)
    how = "checkpointed" if checkpointed else "no checkpointing"
    return (
        f"{line}; decoder activations ~{memory / 2**30:.2f} GiB per rank for a micro-batch "
        f"of {tokens} tokens per rank ({how}, {shape.layers} layers x hidden {shape.hidden})"
    )
