"""Per-group reductions over rows identified by integer group ids
(docs/methods.md#advantage-estimators).

A *group* is every row generated for one prompt. Rows of a group need not be contiguous in
the batch, so every reduction goes through a dense group index built with `torch.unique`.
Statistics never produce NaN: a group with no included row has mean 0, and a group with
fewer than two included rows has std 0 (the unbiased estimator is undefined there). A group
whose included rows all share one value (max == min, tested exactly) has that value as its
mean and std 0 exactly: the float mean of seven float32 0.7s is not 0.7, and
`(r - mean) / (std + eps)` would blow the rounding up to a shared advantage of +0.056.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass(frozen=True)
class GroupStats:
    """Per-group statistics of one value per row.

    `index[b]` is the dense group (0..G-1) of row b; `count`, `mean`, `std` and `uniform`
    (the group has an included row and all its included rows share one value) are `[G]`.
    Use `per_row(x)` to broadcast a `[G]` tensor back to rows.
    """

    index: Tensor
    count: Tensor
    mean: Tensor
    std: Tensor
    uniform: Tensor

    @property
    def num_groups(self) -> int:
        return int(self.count.numel())

    def per_row(self, per_group: Tensor) -> Tensor:
        return per_group[self.index]


def check_rows(group_ids: Tensor, **row_tensors: Tensor) -> None:
    """Raise ValueError unless `group_ids` is an integer `[B]` tensor and each named tensor
    has B rows."""
    if group_ids.dim() != 1 or group_ids.dtype.is_floating_point:
        raise ValueError(
            f"group_ids must be a 1-D integer tensor, got shape {tuple(group_ids.shape)} "
            f"and dtype {group_ids.dtype}"
        )
    for name, tensor in row_tensors.items():
        if tensor.shape[:1] != group_ids.shape:
            raise ValueError(
                f"{name} has shape {tuple(tensor.shape)} but group_ids has "
                f"{group_ids.numel()} rows; pass one entry per row"
            )


def dense_group_index(group_ids: Tensor) -> tuple[Tensor, int]:
    """Map arbitrary integer group ids to `(index [B] in 0..G-1, G)`."""
    _, index = torch.unique(group_ids, return_inverse=True)
    num_groups = int(index.max()) + 1 if index.numel() else 0
    return index, num_groups


def group_sum(values: Tensor, index: Tensor, num_groups: int) -> Tensor:
    """`[G]` sum of `values [B]` per group."""
    return values.new_zeros(num_groups).index_add_(0, index, values)


def group_max(values: Tensor, index: Tensor, num_groups: int, *, initial: float) -> Tensor:
    """`[G]` maximum of `values [B]` per group, `initial` for a group with no rows."""
    start = values.new_full((num_groups,), initial)
    return start.scatter_reduce(0, index, values, reduce="amax", include_self=True)


@torch.no_grad()
def group_stats(values: Tensor, group_ids: Tensor, include: Tensor | None = None) -> GroupStats:
    """Mean and unbiased std of `values [B]` per group, over the rows where `include` is
    True (all rows when None):

        mean_g = sum_{i in g} v_i / n_g,   std_g = sqrt(sum_{i in g} (v_i - mean_g)^2 / (n_g - 1))

    with mean_g = 0 when n_g = 0 and std_g = 0 when n_g < 2; when every included value of g
    is the same v (max == min), mean_g = v and std_g = 0 exactly, whatever the rounding of
    the sum (7 x float32 0.7: the sum / 7 is 0.70000005).
    """
    check_rows(group_ids, values=values)
    index, num_groups = dense_group_index(group_ids)
    weight = torch.ones_like(values) if include is None else include.to(values.dtype)
    included = weight > 0
    masked = torch.where(included, values, torch.zeros_like(values))
    count = group_sum(weight, index, num_groups)
    high = group_max(torch.where(included, values, -math.inf), index, num_groups, initial=-math.inf)
    low = -group_max(
        torch.where(included, -values, -math.inf), index, num_groups, initial=-math.inf
    )
    uniform = (count > 0) & (high == low)
    mean = group_sum(masked, index, num_groups) / count.clamp_min(1)
    mean = torch.where(uniform, high, mean)
    squares = group_sum((masked - mean[index]) ** 2 * weight, index, num_groups)
    variance = squares / (count - 1).clamp_min(1)
    std = torch.where((count > 1) & ~uniform, variance.sqrt(), torch.zeros_like(variance))
    return GroupStats(index=index, count=count, mean=mean, std=std, uniform=uniform)
