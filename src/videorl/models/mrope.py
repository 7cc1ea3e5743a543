"""Multimodal RoPE positions as the Qwen2-VL / Qwen2.5-VL reference computes them.

The reference (Qwen's code, transformers <= 5.2, vLLM) starts the text that follows a vision
block at `max(position ids of the block) + 1`; the block's temporal ids are
`t * tokens_per_second * second_per_grid_t`, so after a video the text starts past the last
frame's temporal id. transformers >= 5.3 (through 5.24 at least) starts it at
`block start + max(h, w) / spatial_merge` instead, ignoring the temporal extent: for a video
with `(T - 1) * interval >= max(h, w) / merge` every text token after the video (the question,
the response) gets other positions than in pretraining and in vLLM's rollouts, so the
log-probs of the loss differ from the rollout's (measured on a tiny Qwen2.5-VL: ~1e-3 per token).

`use_reference_rope_index(model)` re-bases the text runs of HF's `get_rope_index` output on the
reference rule. It changes nothing where HF already agrees (images, Qwen3-VL's one-frame
blocks, any transformers version that restores the reference).
"""

from __future__ import annotations

import itertools
import types
from typing import Any

import torch


def reference_positions(position_ids: torch.Tensor, token_types: torch.Tensor) -> torch.Tensor:
    """One row's `[3, L]` positions with each text run after a vision run (token type != 0)
    starting at the running maximum + 1; later runs shift with it."""
    out = position_ids.clone()
    offset, start, previous_vision = 0, 0, False
    for kind, run in itertools.groupby(token_types.tolist()):
        end = start + len(list(run))
        if kind == 0 and previous_vision:
            offset = int(out[:, :start].max()) + 1 - int(position_ids[0, start])
        out[:, start:end] = position_ids[:, start:end] + offset
        previous_vision, start = kind != 0, end
    return out


def _get_rope_index(
    self: Any,
    input_ids: torch.Tensor,
    mm_token_type_ids: torch.Tensor | None = None,
    *args: Any,
    attention_mask: torch.Tensor | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    position_ids, deltas = type(self).get_rope_index(
        self, input_ids, mm_token_type_ids, *args, attention_mask=attention_mask, **kwargs
    )
    if mm_token_type_ids is None or not bool((mm_token_type_ids != 0).any()):
        return position_ids, deltas
    position_ids = position_ids.clone()
    deltas = deltas.clone()
    for row in range(input_ids.shape[0]):
        keep = (
            attention_mask[row].bool()
            if attention_mask is not None
            else torch.ones_like(input_ids[row], dtype=torch.bool)
        )
        fixed = reference_positions(position_ids[:, row, keep], mm_token_type_ids[row, keep])
        position_ids[:, row, keep] = fixed
        deltas[row] = fixed.max() + 1 - int(keep.sum())
    return position_ids, deltas


def use_reference_rope_index(model: torch.nn.Module) -> None:
    """Make the Qwen-VL backbone inside `model` (a `*ForConditionalGeneration`) use the
    reference text positions; a no-op for models without `get_rope_index`."""
    backbone = getattr(model, "model", model)
    if hasattr(type(backbone), "get_rope_index"):
        backbone.get_rope_index = types.MethodType(_get_rope_index, backbone)
