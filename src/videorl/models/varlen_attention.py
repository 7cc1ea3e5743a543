"""`sdpa_varlen`: variable-length attention for packed rows without flash-attn (any device).

For a packed sequence (batch 1, text positions restarting at 0 at each row, no padding
mask, no cache), attention runs per row: `softmax(q_r k_r^T * scale + causal) v_r` for each
row r, with PyTorch's fused `scaled_dot_product_attention(is_causal=True)`. The cost is
`sum_r L_r^2` attention and no padding anywhere, where a block-diagonal mask over the whole
pack would cost `N^2` (N = sum_r L_r) and fall back to the unfused kernel. Every other call
(generation with padding or a cache, the vision tower's non-causal blocks) is plain `sdpa`,
so a model loaded with `attn_implementation="sdpa_varlen"` behaves exactly like `sdpa` there.
"""

from __future__ import annotations

import itertools
from typing import Any

import torch
import torch.nn.functional as F

NAME = "sdpa_varlen"


def row_boundaries(position_ids: torch.Tensor) -> list[int] | None:
    """Start offsets of the packed rows (plus the end) from text positions [1, N] that restart
    at each row; None unless the positions restart at least once (not a packed sequence)."""
    positions = position_ids.reshape(-1)
    restarts = (torch.diff(positions) != 1).nonzero().flatten() + 1
    if restarts.numel() == 0:
        return None
    return [0, *restarts.tolist(), int(positions.numel())]


def _packed_rows(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    attention_mask: torch.Tensor | None,
    position_ids: torch.Tensor | None,
) -> list[int] | None:
    if attention_mask is not None or position_ids is None or not getattr(module, "is_causal", True):
        return None
    if query.shape[0] != 1 or query.shape[2] != key.shape[2]:
        return None
    if position_ids.dim() == 3:  # Qwen-VL [4, 1, N] positions: row 0 is the text positions
        position_ids = position_ids[0]
    if position_ids.shape[-1] != query.shape[2]:
        return None
    return row_boundaries(position_ids)


def sdpa_varlen_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """transformers attention interface: q/k/v [1, H, N, D] -> output [1, N, H, D]."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    bounds = _packed_rows(module, query, key, attention_mask, kwargs.get("position_ids"))
    if bounds is None:
        return sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs
        )
    gqa = query.shape[1] != key.shape[1]
    outputs = [
        F.scaled_dot_product_attention(
            query[:, :, start:end],
            key[:, :, start:end],
            value[:, :, start:end],
            dropout_p=dropout if module.training else 0.0,
            is_causal=True,
            scale=scaling,
            enable_gqa=gqa,
        )
        for start, end in itertools.pairwise(bounds)
    ]
    return torch.cat(outputs, dim=2).transpose(1, 2).contiguous(), None


def _varlen_mask(**kwargs: Any) -> Any:
    """No mask for an unpadded causal forward without cache (rows are told apart by their
    positions); sdpa's own mask otherwise."""
    from transformers.masking_utils import sdpa_mask

    unpadded = kwargs.get("attention_mask") is None and not kwargs.get("q_offset")
    if unpadded and kwargs.get("q_length") == kwargs.get("kv_length"):
        return None
    return sdpa_mask(**kwargs)


def register() -> None:
    """Make `attn_implementation="sdpa_varlen"` known to transformers (idempotent)."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface

    AttentionInterface.register(NAME, sdpa_varlen_attention)
    AttentionMaskInterface.register(NAME, _varlen_mask)
