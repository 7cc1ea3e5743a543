"""The vision tower split over a sequence-parallel group: each rank encodes a share of the frames.

Every rank of a sequence-parallel group holds the same rows, so without this each rank would
run the whole vision tower on every video. Inside `split_vision(model, group)` a call of the
tower with the patches `x` [P, d] of items (videos, images) with grids `(t_i, h_i, w_i)`
runs as follows:

1. **Shares**: the items' temporal slices (slice (i, j): the h_i * w_i patches of time step
   j of item i, contiguous in `x`) are cut into S contiguous runs of about P / S patches,
   at least one slice each (`slice_shares`); rank r keeps run r, a contiguous range of `x`,
   whose grids are the items' slices it covers, `(t_i', h_i, w_i)`.
2. **Encode**: rank r runs the tower on its share only.
3. **Gather**: the merged embeddings (and Qwen3-VL's deepstack features, concatenated along
   the feature dim so that one exchange carries them) are all-gathered; in rank order they
   are the embeddings of the whole call, as one tower call on every item gives them.

Exact, not approximate, for the towers in `PER_SLICE_TOWERS`: a slice's computation never
involves another slice. Read from transformers 5.x: Qwen2.5-VL and Qwen3-VL build their
attention segments with `get_vision_cu_seqlens(merge_temporal=False)` (one segment per
time step, in the full-attention blocks too); Qwen2.5-VL's window attention
(`get_vision_window_index`) cuts windows inside one time step; the rotary positions
(`get_vision_position_ids`) and Qwen3-VL's interpolated position embeddings depend on
(h, w) only, repeated over t; patch embedding and patch merging are per patch and per
group of spatial_merge_size^2 patches of one time step. Other towers are refused
(`vision_split_refusal`: every rank then encodes every item, as before), and calls that do
not split (fewer slices than ranks; precomputed segments or per-patch outputs asked for in
the kwargs) run whole on every rank.

Gradients: the gather's backward sums the group's gradients of the whole output
(all-reduce) and keeps the rank's share. Each rank's gradient of the gathered embeddings is
S times the true gradient restricted to the visual tokens of its text shard
(`models/sequence_parallel.py`), so the sum is S times the true gradient and the tower's
gradient on rank r is S times the true gradient of its share; the mean over the group (FSDP
averaging) is the true gradient of the whole tower, as for every other parameter.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch.distributed as dist

# towers whose attention, positions and merging stay inside one temporal slice (docstring)
PER_SLICE_TOWERS = frozenset({"Qwen2_5_VisionTransformerPretrainedModel", "Qwen3VLVisionModel"})
_SPLIT_MARK = "_videorl_split_group"
# tower kwargs computed for the whole call (transformers' vision_utils precomputed tensors)
# or asking for per-patch outputs: such a call runs unsplit
_WHOLE_CALL_KWARGS = frozenset(
    {
        "cu_seqlens",
        "max_seqlen",
        "position_ids",
        "window_index",
        "cu_window_seqlens",
        "max_window_seqlen",
        "interp_indices",
        "interp_weights",
        "bilinear_indices",
        "bilinear_weights",
        "merged_shape",
        "output_hidden_states",
        "output_attentions",
    }
)


def vision_tower(model: torch.nn.Module) -> torch.nn.Module | None:
    backbone = getattr(model, "model", model)
    return getattr(backbone, "visual", None)


def vision_split_refusal(model: torch.nn.Module) -> str | None:
    """Why `model`'s vision tower cannot be split by temporal slices (None: it can)."""
    tower = vision_tower(model)
    if tower is None:
        return f"{type(model).__name__} has no vision tower"
    name = type(tower).__name__
    if not any(cls.__name__ in PER_SLICE_TOWERS for cls in type(tower).__mro__):
        return (
            f"{name} is not known to keep attention inside one temporal slice (checked: "
            f"{', '.join(sorted(PER_SLICE_TOWERS))}); every rank encodes every video"
        )
    return None


def slice_shares(grid_thw: torch.Tensor, size: int) -> list[tuple[int, int]] | None:
    """The S contiguous runs of temporal slices, as [start, end) slice indices over the
    items' slices in order, balanced by patch count; None when there are fewer slices than
    ranks (every rank must encode something: the tower's parameters then take part in
    every rank's backward)."""
    patches = [h * w for t, h, w in grid_thw.tolist() for _ in range(t)]
    count = len(patches)
    if count < size:
        return None
    starts = [0, *itertools.accumulate(patches)]
    total = starts[-1]
    bounds = [0]
    for rank in range(1, size):
        target = rank * total / size
        cut = min(range(count + 1), key=lambda k: abs(starts[k] - target))
        bounds.append(min(max(cut, bounds[-1] + 1), count - (size - rank)))
    bounds.append(count)
    return list(itertools.pairwise(bounds))


def _local_grid(grid_thw: torch.Tensor, share: tuple[int, int]) -> tuple[torch.Tensor, int, int]:
    """The grids of the slices in `share` and their patch range [first, last) in the call."""
    rows: list[list[int]] = []
    first, last, slice_start, patch_start = 0, 0, 0, 0
    for t, h, w in grid_thw.tolist():
        lo, hi = max(share[0], slice_start), min(share[1], slice_start + t)
        if lo < hi:
            if not rows:
                first = patch_start + (lo - slice_start) * h * w
            rows.append([hi - lo, h, w])
            last = patch_start + (hi - slice_start) * h * w
        slice_start += t
        patch_start += t * h * w
    return torch.tensor(rows, dtype=grid_thw.dtype, device=grid_thw.device), first, last


class _GatherShares(torch.autograd.Function):
    """All-gather the ranks' shares [n_r, D] (n_r known on every rank) into [sum n_r, D];
    the backward all-reduces (sums) the gradient of the whole output and keeps the rank's
    share (module docstring)."""

    @staticmethod
    def forward(
        ctx: Any, share: torch.Tensor, counts: list[int], group: dist.ProcessGroup | None
    ) -> torch.Tensor:
        ctx.counts, ctx.group = counts, group
        longest = max(counts)
        padded = torch.zeros(longest, *share.shape[1:], dtype=share.dtype, device=share.device)
        padded[: share.shape[0]] = share
        parts = [torch.empty_like(padded) for _ in counts]
        dist.all_gather(parts, padded, group=group)
        return torch.cat([part[:n] for part, n in zip(parts, counts, strict=True)])

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        total = grad.contiguous().clone()
        dist.all_reduce(total, group=ctx.group)
        rank = dist.get_rank(ctx.group)
        start = sum(ctx.counts[:rank])
        return total[start : start + ctx.counts[rank]], None, None


def _split_forward(
    forward: Callable[..., Any], tower: torch.nn.Module, group: dist.ProcessGroup | None
) -> Callable[..., Any]:
    size, rank = dist.get_world_size(group), dist.get_rank(group)
    vision: Any = tower  # a transformers vision tower: fields nn.Module does not declare
    merge = int(vision.spatial_merge_size) ** 2

    def run(hidden_states: torch.Tensor, grid_thw: torch.Tensor, **kwargs: Any) -> Any:
        shares = slice_shares(grid_thw, size)
        asked = [v for k, v in kwargs.items() if k in _WHOLE_CALL_KWARGS]
        if shares is None or any(v is not None and v is not False for v in asked):
            return forward(hidden_states, grid_thw=grid_thw, **kwargs)
        if hidden_states.shape[0] != int(grid_thw.prod(-1).sum()):
            raise ValueError(
                f"vision tower input has {hidden_states.shape[0]} patches, the grids "
                f"{grid_thw.tolist()} make {int(grid_thw.prod(-1).sum())}"
            )
        grid, first, last = _local_grid(grid_thw, shares[rank])
        out = forward(hidden_states[first:last], grid_thw=grid, **kwargs)
        counts = [int(_local_grid(grid_thw, share)[0].prod(-1).sum()) // merge for share in shares]
        deepstack = list(getattr(out, "deepstack_features", None) or [])
        local = torch.cat([out.pooler_output, *deepstack], dim=-1)
        gathered = _GatherShares.apply(local, counts, group)
        parts = gathered.split([t.shape[-1] for t in (out.pooler_output, *deepstack)], dim=-1)
        fields: dict[str, Any] = {"pooler_output": parts[0]}  # last_hidden_state: local, left out
        if hasattr(out, "deepstack_features"):
            fields["deepstack_features"] = list(parts[1:])
        return type(out)(**fields)

    setattr(run, _SPLIT_MARK, group)
    return run


@contextlib.contextmanager
def split_vision(model: torch.nn.Module, group: dist.ProcessGroup | None = None) -> Iterator[None]:
    """Within the block, calls of `model`'s vision tower (same inputs on every rank of
    `group`) encode each rank's share of the temporal slices and gather the embeddings
    (module docstring). No-op for a group of one rank, a refused tower
    (`vision_split_refusal`) or a tower already split."""
    size = dist.get_world_size(group) if dist.is_initialized() else 1
    tower = vision_tower(model)
    if size == 1 or tower is None or vision_split_refusal(model) is not None:
        yield
        return
    if hasattr(tower.__dict__.get("forward"), _SPLIT_MARK):  # entered for this tower already
        yield
        return
    patched = tower.__dict__.get("forward")
    tower.forward = _split_forward(tower.forward, tower, group)
    try:
        yield
    finally:
        if patched is None:
            del tower.forward
        else:
            tower.forward = patched
