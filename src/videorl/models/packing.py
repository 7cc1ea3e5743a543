"""Padding-free packed sequences: many [prompt | response] rows as one row, no padding.

A padded micro-batch costs `rows x longest row` tokens; a packed one costs `sum of row
lengths`. Rows are concatenated into a single sequence `[1, N]`; each row's positions restart
at 0, and the attention stays inside each row:

- with a variable-length kernel (`flash_attention_2/3`, or `sdpa_varlen` from
  `models/varlen_attention.py` on any device), the row boundaries (`cu_seqlens`) come from
  the restarting text positions: no padding, no mask, attention cost `sum_r L_r^2`;
- with `sdpa` / `eager` / `flex_attention`, transformers builds a block-diagonal causal mask
  from the same positions: correct, but the mask is `N x N`, so it only pays off with a
  varlen kernel (`model.packing: auto` therefore packs only there).

Qwen-VL models take positions as `[4, 1, N]`: row 0 the plain text positions (what the mask /
`cu_seqlens` come from), rows 1-3 the multimodal RoPE (temporal, height, width) positions,
computed per row exactly as in the padded forward and concatenated. Hybrid models with linear
attention (Qwen3.5's gated delta net) mix state across a packed boundary, so they are never
packed (`packing_unsupported_reason`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from videorl.models.inputs import VISION_KEYS, PromptEncoding

VARLEN_ATTENTION = ("flash_attention_2", "flash_attention_3", "sdpa_varlen")
MASKED_ATTENTION = ("sdpa", "eager", "flex_attention")


def _text_config(model: torch.nn.Module) -> Any:
    config = model.config
    return getattr(config, "text_config", None) or config


def packing_unsupported_reason(model: torch.nn.Module) -> str | None:
    """Why `model` cannot take packed rows, or None when it can."""
    text = _text_config(model)
    config: Any = model.config  # a transformers config: fields nn.Module does not declare
    layer_types = getattr(text, "layer_types", None) or ()
    if getattr(text, "use_sliding_window", False) and getattr(text, "sliding_window", None):
        return "sliding-window attention layers are not supported with packed rows"
    if "linear_attention" in layer_types:
        return (
            f"{config.model_type} has linear-attention layers whose recurrent state and "
            "short convolution would run across packed row boundaries"
        )
    impl = getattr(model.config, "_attn_implementation", None) or "sdpa"
    if impl not in VARLEN_ATTENTION + MASKED_ATTENTION:
        return f"attention implementation {impl!r} has no packed-sequence support in transformers"
    return None


def resolve_packing(model: torch.nn.Module, mode: str | bool) -> bool:
    """`"auto"` packs when the attention is a varlen kernel and the model supports packing;
    `True` packs wherever supported (raises ValueError naming why not); `False` never packs."""
    if mode is False:
        return False
    reason = packing_unsupported_reason(model)
    if mode is True:
        if reason:
            raise ValueError(reason)
        return True
    if mode != "auto":
        raise ValueError(f"packing must be 'auto', true or false, got {mode!r}")
    impl = getattr(model.config, "_attn_implementation", None)
    return reason is None and impl in VARLEN_ATTENTION


@dataclass
class PackedRows:
    """Model inputs of the packed sequence and where each row's response logits are."""

    inputs: dict[str, torch.Tensor]
    logit_positions: torch.Tensor  # [K] position whose logits predict each response token
    targets: torch.Tensor  # [K] the response tokens
    response_lengths: list[int]


def _row_positions(
    backbone: torch.nn.Module, ids: torch.Tensor, types: torch.Tensor, prompt: PromptEncoding
) -> torch.Tensor:
    """[3, L] multimodal RoPE positions of one row (token types `types` [L]), as its unpacked
    forward computes them."""
    if not bool((types != 0).any()):
        return torch.arange(int(ids.numel())).expand(3, -1)
    grids = {k: v for k, v in prompt.vision.items() if not k.startswith("pixel_values")}
    inner: Any = backbone  # a transformers model: methods nn.Module does not declare
    positions, _ = inner.get_rope_index(ids[None], types[None], **grids)
    return positions[:, 0]


def pack_rows(
    model: torch.nn.Module,
    prompts: Sequence[PromptEncoding],
    responses: Sequence[torch.Tensor],
) -> PackedRows:
    """Concatenate rows `[prompt_i | response_i]` into one `[1, N]` sequence with positions
    restarting per row; vision tensors are concatenated in row order (as in `collate`)."""
    backbone = getattr(model, "model", None)
    multimodal = backbone is not None and hasattr(backbone, "get_rope_index")
    ids, types, text_pos, rope_pos, logit_pos, targets = [], [], [], [], [], []
    offset = 0
    for prompt, response in zip(prompts, responses, strict=True):
        response = response.to(torch.long)
        row = torch.cat([prompt.input_ids, response])
        length, start = int(row.numel()), offset + prompt.length
        ids.append(row)
        text_pos.append(torch.arange(length))
        row_types = torch.zeros(length, dtype=torch.int32)
        if prompt.mm_token_type_ids is not None:
            row_types[: prompt.length] = prompt.mm_token_type_ids
        types.append(row_types)
        if multimodal and backbone is not None:  # multimodal: backbone is set
            rope_pos.append(_row_positions(backbone, row, row_types, prompt))
        logit_pos.append(torch.arange(start - 1, start - 1 + int(response.numel())))
        targets.append(response)
        offset += length
    inputs: dict[str, torch.Tensor] = {"input_ids": torch.cat(ids)[None]}
    text_positions = torch.cat(text_pos)[None]
    if multimodal:
        inputs["position_ids"] = torch.cat([text_positions[None], torch.cat(rope_pos, 1)[:, None]])
    else:
        inputs["position_ids"] = text_positions
    if any(p.mm_token_type_ids is not None for p in prompts):
        inputs["mm_token_type_ids"] = torch.cat(types)[None]
    for key in VISION_KEYS:
        parts = [p.vision[key] for p in prompts if key in p.vision]
        if parts:
            inputs[key] = torch.cat(parts, dim=0)
    return PackedRows(
        inputs=inputs,
        logit_positions=torch.cat(logit_pos),
        targets=torch.cat(targets),
        response_lengths=[int(r.numel()) for r in responses],
    )
