"""Ulysses sequence parallelism for the text model of Qwen2.5-VL and Qwen3-VL.

Inside a sequence-parallel (SP) group of S ranks every rank holds the same rows; the text
model's sequence (padded rows `[B, L]` or one packed row `[1, N]`) is cut into S contiguous
shards, and rank r runs the decoder layers on shard r only, so activations per rank are 1/S
of the sequence. Attention needs the whole sequence: before it an all-to-all turns q/k/v
`[B, H, L/S, D]` (all heads, a sequence shard) into `[B, H/S, L, D]` (a head shard, the
whole sequence), attention runs over the whole sequence for those heads, and the inverse
all-to-all restores `[B, H, L/S, D]`. Both all-to-alls are autograd functions whose backward
is the inverse exchange.

The vision tower encodes each rank's share of the frames and gathers the embeddings
(`models/split_vision.py`; every rank encodes every video for a tower it refuses). The token
embeddings with the visual features scattered in and the multimodal RoPE positions
(`get_rope_index` needs the whole `input_ids` and grids) run unsplit on every rank.
`sequence_parallel(model, group)` wraps the text model's forward so that it receives those full tensors, pads the sequence to a
multiple of S, keeps its shard of the embeddings, the positions and (Qwen3-VL) the deepstack
visual embeddings, and gathers the final hidden states afterwards: the LM head and the
log-probs run on the whole sequence, identically on every rank.

Gradients average over the group, as over data-parallel ranks: every rank of a group computes
the same loss from the gathered hidden states, so the LM head's gradient is whole on every
rank, while the layers before the gather see only the rank's shard; the backward of the
gather keeps the rank's slice of the gradient times S, so that those gradients are S times the
rank's share, and the mean over the group of every parameter's gradient is the full gradient.
FSDP over the whole world (data-parallel x S ranks) therefore needs no other change than the
loss normalization of one data-parallel group.

KV heads: a size that divides them gives each rank its share; with fewer KV heads than ranks
(S a multiple of them) each KV head is repeated S / KV times first, so that rank r gets the
KV head that its query heads share (as verl does).

Attention inside the group is causal; padded rows carry their padding mask and packed rows
their boundaries (from the restarting text positions, as in `models/varlen_attention.py`),
both taken from the full sequence. Qwen3.5's linear-attention layers are refused: their
recurrent state runs along the sequence and would need the state handed from rank to rank.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F

from videorl.models.kv_cache import cache_argument
from videorl.models.split_vision import split_vision
from videorl.models.varlen_attention import row_boundaries

NAME = "ulysses"


@dataclass
class _Active:
    """What the attention of the current sharded forward needs from the full sequence."""

    group: dist.ProcessGroup | None
    size: int
    key_valid: torch.Tensor | None  # [B, Lp] bool: padded rows' keys that may be attended
    bounds: list[int] | None  # packed rows' start offsets in the full sequence (plus the end)


_ACTIVE: _Active | None = None


def _all_to_all(
    x: torch.Tensor, scatter_dim: int, gather_dim: int, group: dist.ProcessGroup | None
) -> torch.Tensor:
    size = dist.get_world_size(group)
    inputs = [part.contiguous() for part in x.chunk(size, dim=scatter_dim)]
    outputs = [torch.empty_like(inputs[0]) for _ in range(size)]
    dist.all_to_all(outputs, inputs, group=group)
    return torch.cat(outputs, dim=gather_dim)


class _AllToAll(torch.autograd.Function):
    """Split `x` along `scatter_dim` over the group, concatenate the received parts along
    `gather_dim`; the backward is the same exchange with the two dims swapped."""

    @staticmethod
    def forward(
        ctx: Any,
        x: torch.Tensor,
        scatter_dim: int,
        gather_dim: int,
        group: dist.ProcessGroup | None,
    ) -> torch.Tensor:
        ctx.dims, ctx.group = (scatter_dim, gather_dim), group
        return _all_to_all(x, scatter_dim, gather_dim, group)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None, None, None]:
        scatter_dim, gather_dim = ctx.dims
        return _all_to_all(grad, gather_dim, scatter_dim, ctx.group), None, None, None


class _GatherSequence(torch.autograd.Function):
    """All-gather the sequence shards along dim 1. What follows runs identically on every
    rank, so the backward keeps the rank's own slice of the (identical) gradient, times the
    group size: gradients then average over the group (module docstring)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, group: dist.ProcessGroup | None) -> torch.Tensor:
        ctx.group, ctx.length = group, x.shape[1]
        parts = [torch.empty_like(x) for _ in range(dist.get_world_size(group))]
        dist.all_gather(parts, x.contiguous(), group=group)
        return torch.cat(parts, dim=1)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        start = dist.get_rank(ctx.group) * ctx.length
        size = dist.get_world_size(ctx.group)
        return grad[:, start : start + ctx.length] * size, None


def seq_to_heads(x: torch.Tensor, group: dist.ProcessGroup | None) -> torch.Tensor:
    """[B, H, L/S, D] (all heads of a sequence shard) -> [B, H/S, L, D] (a head shard)."""
    return _AllToAll.apply(x, 1, 2, group)


def heads_to_seq(x: torch.Tensor, group: dist.ProcessGroup | None) -> torch.Tensor:
    """[B, H/S, L, D] -> [B, H, L/S, D]: the inverse of `seq_to_heads`."""
    return _AllToAll.apply(x, 2, 1, group)


def gather_sequence(x: torch.Tensor, group: dist.ProcessGroup | None) -> torch.Tensor:
    """[B, L/S, ...] shards -> [B, L, ...] on every rank (see `_GatherSequence`)."""
    return _GatherSequence.apply(x, group)


def _text_config(model: torch.nn.Module) -> Any:
    config = model.config
    return getattr(config, "text_config", None) or config


def check_splittable(model: torch.nn.Module, size: int) -> None:
    """Raise ValueError (one line naming the fix) when `model`'s text model cannot be split
    over `size` ranks with Ulysses sequence parallelism."""
    text = _text_config(model)
    config: Any = model.config  # a transformers config: fields nn.Module does not declare
    sp = f"model.sequence_parallel_size={size}"
    if "linear_attention" in (getattr(text, "layer_types", None) or ()):
        raise ValueError(
            f"{sp} is not supported for {config.model_type}: its linear-attention layers "
            "carry a recurrent state along the sequence that Ulysses (an all-to-all over "
            "attention heads) does not hand from rank to rank; use model.sequence_parallel_size=1"
        )
    heads, kv_heads = text.num_attention_heads, text.num_key_value_heads
    if heads % size or (kv_heads % size and size % kv_heads):
        raise ValueError(
            f"{sp} must divide the attention heads ({heads}) and divide or be a multiple of "
            f"the KV heads ({kv_heads}) of {config.model_type}; use a size that "
            f"divides {heads} and divides or is a multiple of {kv_heads}"
        )


def _attend(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, **sdpa: Any) -> Any:
    """Causal attention over the whole sequence (after `seq_to_heads`): [B, h, L, D]."""
    state = _ACTIVE
    assert state is not None
    gqa = query.shape[1] != key.shape[1]
    if state.bounds is not None:
        parts = [
            F.scaled_dot_product_attention(
                query[:, :, a:b],
                key[:, :, a:b],
                value[:, :, a:b],
                is_causal=True,
                enable_gqa=gqa,
                **sdpa,
            )
            for a, b in itertools.pairwise(state.bounds)
        ]
        return torch.cat(parts, dim=2)
    if state.key_valid is None:
        return F.scaled_dot_product_attention(
            query, key, value, is_causal=True, enable_gqa=gqa, **sdpa
        )
    length = query.shape[2]
    causal = torch.ones(length, length, dtype=torch.bool, device=query.device).tril()
    # a padding query attends at least itself (no fully masked row, no NaN); no real query
    # ever attends a padding key
    mask = (causal & state.key_valid[:, None, None, :]) | torch.eye(
        length, dtype=torch.bool, device=query.device
    )
    return F.scaled_dot_product_attention(query, key, value, attn_mask=mask, enable_gqa=gqa, **sdpa)


def ulysses_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """transformers attention interface: q/k/v [B, H, L/S, D] -> output [B, L/S, H, D].
    Outside a sharded forward (the vision tower, generation) it is plain `sdpa`."""
    state = _ACTIVE
    if state is None:
        from transformers.integrations.sdpa_attention import sdpa_attention_forward

        return sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs
        )
    group = state.group
    if key.shape[1] % state.size:  # fewer KV heads than ranks: each rank gets a copy of one
        copies = state.size // key.shape[1]
        key, value = (t.repeat_interleave(copies, dim=1) for t in (key, value))
    q, k, v = (seq_to_heads(t, group) for t in (query, key, value))
    out = _attend(q, k, v, dropout_p=dropout if module.training else 0.0, scale=scaling)
    return heads_to_seq(out, group).transpose(1, 2).contiguous(), None


def _no_mask(**_kwargs: Any) -> None:
    """The sharded forward builds its masks from the full sequence inside the attention."""
    return


def register() -> None:
    """Make `attn_implementation="ulysses"` known to transformers (idempotent)."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface

    AttentionInterface.register(NAME, ulysses_attention)
    AttentionMaskInterface.register(NAME, _no_mask)


def _pad_to(x: torch.Tensor, dim: int, length: int, value: float | bool = 0) -> torch.Tensor:
    missing = length - x.shape[dim]
    if missing == 0:
        return x
    shape = list(x.shape)
    shape[dim] = missing
    return torch.cat([x, x.new_full(shape, value)], dim=dim)


def _full_positions(
    position_ids: torch.Tensor | None, batch: int, length: int, device: torch.device
) -> torch.Tensor:
    if position_ids is None:
        return torch.arange(length, device=device).view(1, 1, -1).expand(3, batch, -1)
    if position_ids.ndim == 2:
        return position_ids[None].expand(3, -1, -1)
    return position_ids


def _local_deepstack(
    visual_pos_masks: torch.Tensor, embeds: list[torch.Tensor], shard: slice
) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """The shard's visual mask and the deepstack embeddings of its visual tokens (the
    embeddings are in row-major order of the full mask)."""
    index = torch.zeros(visual_pos_masks.shape, dtype=torch.long, device=visual_pos_masks.device)
    index[visual_pos_masks] = torch.arange(int(visual_pos_masks.sum()), device=index.device)
    local_mask = visual_pos_masks[:, shard]
    local_index = index[:, shard][local_mask]
    return local_mask, [e[local_index.to(e.device)] for e in embeds]


def _sharded_forward(
    forward: Callable[..., Any], text_config: Any, group: dist.ProcessGroup | None
) -> Callable[..., Any]:
    size, rank = dist.get_world_size(group), dist.get_rank(group)

    def run(
        *,
        inputs_embeds: torch.Tensor,
        position_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        visual_pos_masks: torch.Tensor | None = None,
        deepstack_visual_embeds: list[torch.Tensor] | None = None,
        **kwargs: Any,
    ) -> Any:
        global _ACTIVE
        if kwargs.get("use_cache") or kwargs.get(cache_argument()) is not None:
            raise ValueError("sequence parallelism is for training forwards: no KV cache")
        batch, length = inputs_embeds.shape[:2]
        padded = -(-length // size) * size
        shard = slice(rank * (padded // size), (rank + 1) * (padded // size))
        positions = _full_positions(position_ids, batch, length, inputs_embeds.device)
        positions = _pad_to(positions, -1, padded)
        bounds = None
        if positions.shape[0] == 4 and attention_mask is None and batch == 1:
            text = positions[0, 0].clone()
            text[length:] = text[length - 1] + 1 + torch.arange(padded - length, device=text.device)
            bounds = row_boundaries(text)
        key_valid = None
        if attention_mask is not None and attention_mask.ndim == 2:
            key_valid = _pad_to(attention_mask.bool(), 1, padded, True)
        extra: dict[str, Any] = {}
        if visual_pos_masks is not None and deepstack_visual_embeds is not None:
            full_mask = _pad_to(visual_pos_masks, 1, padded, False)
            mask, embeds = _local_deepstack(full_mask, deepstack_visual_embeds, shard)
            extra = {"visual_pos_masks": mask, "deepstack_visual_embeds": embeds}
        previous = (_ACTIVE, text_config._attn_implementation)
        _ACTIVE = _Active(group=group, size=size, key_valid=key_valid, bounds=bounds)
        text_config._attn_implementation = NAME
        try:
            outputs = forward(
                inputs_embeds=_pad_to(inputs_embeds, 1, padded)[:, shard],
                position_ids=positions[..., shard],
                attention_mask=None,
                **extra,
                **kwargs,
            )
        finally:
            _ACTIVE, text_config._attn_implementation = previous
        hidden = gather_sequence(outputs.last_hidden_state, group)[:, :length]
        outputs.last_hidden_state = hidden
        return outputs

    return run


def _language_model(model: torch.nn.Module) -> torch.nn.Module:
    backbone = getattr(model, "model", model)
    language = getattr(backbone, "language_model", None)
    if language is None:
        raise ValueError(
            f"sequence parallelism needs a vision-language model with a `language_model` "
            f"(Qwen2.5-VL, Qwen3-VL); {type(model).__name__} has none"
        )
    return language


@contextlib.contextmanager
def sequence_parallel(
    model: torch.nn.Module, group: dist.ProcessGroup | None = None
) -> Iterator[torch.nn.Module]:
    """Within the block, `model`'s forwards (same inputs on every rank of `group`) run the
    text model split over the group's ranks (module docstring) and the vision tower on each
    rank's share of the frames (`split_vision`); a group of one rank is a no-op. Raises
    ValueError for a model that cannot be split (`check_splittable`)."""
    size = dist.get_world_size(group) if dist.is_initialized() else 1
    if size == 1:
        yield model
        return
    check_splittable(model, size)
    register()
    language = _language_model(model)
    patched = language.__dict__.get("forward")  # an instance-level forward already there
    language.forward = _sharded_forward(language.forward, language.config, group)
    try:
        with split_vision(model, group):
            yield model
    finally:
        if patched is None:
            del language.forward  # the class's forward shows again
        else:
            language.forward = patched
