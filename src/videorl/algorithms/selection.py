"""OraRL stages D and E: sign-balanced row selection and post-selection correction
(docs/methods.md#orarl).

D keeps `k = max(1, floor(n * (1 - prune_ratio)))` rows per group, the annotation row
always among them, then the `pos_quota` largest positive and `neg_quota` largest negative
policy rows (by |A|, ties by lower row index); a short bucket is filled from the leftover
nonzero rows by |A|, then from zero rows in row order. Dropped rows take no part in the
backward pass. E re-centres and rescales the kept rows of each group that lost rows.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Annotated

import torch
from torch import Tensor

from videorl.algorithms.advantages import AdvantageResult
from videorl.algorithms.groups import check_rows, dense_group_index, group_stats, group_sum
from videorl.config.constraints import Between, Checked, Ge, Gt, Ordered
from videorl.errors import ConfigError


@dataclass(frozen=True)
class SelectionResult:
    """`kept [B]` bool and float metrics."""

    kept: Tensor
    metrics: dict[str, float]


@torch.no_grad()
def row_scores(token_advantages: Tensor, mask: Tensor) -> Tensor:
    """The selection score of each row: the mean of its token advantages over `mask`
    (0 for a row with no response token)."""
    weight = mask.to(token_advantages.dtype)
    total = (token_advantages * weight).sum(-1)
    return total / weight.sum(-1).clamp_min(1)


def _select_group(
    rows: list[int],
    scores: list[float],
    annotation: list[bool],
    k: int,
    config: PruningConfig,
    fallbacks: Counter[str],
) -> list[int]:
    if len(rows) <= k:
        return rows
    policy = [i for i in rows if not annotation[i]]

    def by_magnitude(i: int) -> tuple[float, int]:
        return (-abs(scores[i]), i)

    positive = sorted((i for i in policy if scores[i] > 0), key=by_magnitude)
    negative = sorted((i for i in policy if scores[i] < 0), key=by_magnitude)
    zero = [i for i in policy if scores[i] == 0]
    kept = [i for i in rows if annotation[i]]
    kept += positive[: config.pos_quota] + negative[: config.neg_quota]
    fallbacks["pos"] += len(positive) < config.pos_quota
    fallbacks["neg"] += len(negative) < config.neg_quota
    leftover = sorted(positive[config.pos_quota :] + negative[config.neg_quota :], key=by_magnitude)
    fill = (leftover + zero)[: k - len(kept)]
    fallbacks["zero"] += any(scores[i] == 0 for i in fill)
    return kept + fill


def _sign_metrics(scores: Tensor, policy: Tensor, kept: Tensor) -> dict[str, float]:
    metrics: dict[str, float] = {}
    for state, rows in (("kept", policy & kept), ("dropped", policy & ~kept)):
        for sign, match in (("pos", scores > 0), ("neg", scores < 0), ("zero", scores == 0)):
            metrics[f"select/{state}_{sign}"] = float((rows & match).sum())
        magnitude = scores[rows].abs()
        metrics[f"select/abs_adv_{state}"] = float(magnitude.mean()) if rows.any() else 0.0
    return metrics


@torch.no_grad()
def select_rows(
    advantages: Tensor,
    group_ids: Tensor,
    is_annotation: Tensor | None,
    config: PruningConfig,
    n: int,
) -> SelectionResult:
    """Stage D: which rows of each group take part in the update (see module docstring).

    `advantages [B]` is each row's score (`row_scores` for token advantages); `n` is the
    policy rows per group (`rollout.n`), of which `config.kept_rows(n)` are kept. A group
    with at most that many rows keeps them all; a group with more than one annotation row
    is an error.
    """
    check_rows(group_ids, advantages=advantages)
    annotation = (
        torch.zeros_like(group_ids, dtype=torch.bool)
        if is_annotation is None
        else is_annotation.bool()
    )
    scores, flags = advantages.tolist(), annotation.tolist()
    groups: dict[int, list[int]] = defaultdict(list)
    for row, group in enumerate(group_ids.tolist()):
        groups[group].append(row)
    fallbacks: Counter[str] = Counter()
    kept_rows: list[int] = []
    for group, rows in groups.items():
        if sum(flags[i] for i in rows) > 1:
            raise ValueError(
                f"group {group} has {sum(flags[i] for i in rows)} annotation rows; OraRL "
                "appends at most one annotation row per group"
            )
        kept_rows += _select_group(rows, scores, flags, config.kept_rows(n), config, fallbacks)
    kept = torch.zeros_like(annotation)
    kept[torch.tensor(kept_rows, dtype=torch.long, device=kept.device)] = True
    metrics = {
        "select/kept_rows": float(kept.sum()),
        "select/dropped_rows": float((~kept).sum()),
        "select/fallback_pos_groups": float(fallbacks["pos"]),
        "select/fallback_neg_groups": float(fallbacks["neg"]),
        "select/fallback_zero_groups": float(fallbacks["zero"]),
        **_sign_metrics(advantages, ~annotation, kept),
    }
    return SelectionResult(kept, metrics)


def check_divisible(kept_total: int, world_size: int, *, allow_pad: bool = False) -> int:
    """The number of padding rows that make `kept_total` divisible by the data-parallel
    `world_size` (0 when it already is). Without `allow_pad` a remainder is a ConfigError."""
    if world_size < 1:
        raise ConfigError(f"data-parallel world_size={world_size} must be >= 1")
    padding = -kept_total % world_size
    if padding and not allow_pad:
        raise ConfigError(
            f"selection kept {kept_total} rows, which does not divide over {world_size} "
            f"data-parallel ranks ({kept_total} % {world_size} = {kept_total % world_size}); "
            f"make (prompts per step) * k a multiple of {world_size}, or allow padding with "
            f"{padding} zero-weight rows"
        )
    return padding


@dataclass(frozen=True)
class CorrectionConfig(Checked):
    """Stage E: the shrink factor is `clip(rms_ref / (rms + eps), min_scale, max_scale)`,
    applied only when the group's policy reward std is at least `min_reward_std`."""

    min_scale: Annotated[float, Ge(0)] = 0.25
    """Lower clip of the shrink factor (<= max_scale)."""
    max_scale: float = 1.0
    """Upper clip of the shrink factor (>= min_scale)."""
    min_reward_std: Annotated[float, Ge(0)] = 1e-3
    """Correct only groups whose policy reward std is at least this."""
    eps: Annotated[float, Gt(0)] = 1e-6
    """Numerical floor in the factor's denominator."""

    orders = (
        Ordered("min_scale", "max_scale", "0 <= min_scale <= max_scale; defaults 0.25 and 1.0"),
    )


@dataclass(frozen=True)
class PruningConfig(Checked):
    """OraRL sign-balanced selection (stage D) and post-selection correction (stage E).

    Of each group of n policy rows (`rollout.n`) stage D keeps `kept_rows(n)` rows, the
    annotation row among them, so `pos_quota + neg_quota + 1` must equal it: the config
    checks that against `rollout.n` when it loads."""

    enabled: bool = False
    """Turn on OraRL stages D and E (needs algorithm.annotation_rows)."""
    prune_ratio: Annotated[float, Between(0.0, 1.0, high_open=True)] = 0.5
    """Fraction of each group's rows dropped before the update."""
    pos_quota: Annotated[int, Ge(0)] = 1
    """Rows with a positive advantage that selection always keeps."""
    neg_quota: Annotated[int, Ge(0)] = 2
    """Rows with a negative advantage that selection always keeps."""
    correction: CorrectionConfig = field(default_factory=CorrectionConfig)
    """Stage E: the shrink factor is `clip(rms_ref / (rms + eps), min_scale, max_scale)`, applied
    only when the group's policy reward std is at least `min_reward_std`."""

    def kept_rows(self, n: int) -> int:
        """k: the rows kept per group of `n` policy rows, the annotation row included. The
        1e-9 absorbs float error so that n = 20, prune_ratio = 0.9 keeps 2 rows, not 1."""
        return max(1, math.floor(n * (1 - self.prune_ratio) + 1e-9))


@dataclass(frozen=True)
class SelectionReference:
    """Per-row copies of the group's pre-selection `rms` (of its policy rows' advantages,
    the annotation row excluded, as OraRL's `policy_rms`) and `reward_std` (unbiased std of
    its policy rewards)."""

    rms: Tensor
    reward_std: Tensor


@torch.no_grad()
def selection_reference(
    advantages: Tensor, rewards: Tensor, group_ids: Tensor, is_annotation: Tensor | None
) -> SelectionReference:
    """Stage E's references, taken before selection, both over the group's policy rows i
    (the annotation row excluded): `rms_ref = sqrt(mean_i A_i^2)` and `sp_ref = std_i(r_i)`.

    Example: policy advantages [-0.3, -0.1, 0.1, 0.3] and annotation 0.9 give
    rms_ref = sqrt(0.2 / 4) = 0.2236 (not 0.4494 with the annotation row included)."""
    check_rows(group_ids, advantages=advantages, rewards=rewards)
    policy = None if is_annotation is None else ~is_annotation.bool()
    squares = group_stats(advantages**2, group_ids, include=policy)
    rewards_std = group_stats(rewards, group_ids, include=policy)
    return SelectionReference(
        rms=squares.per_row(squares.mean).sqrt(),
        reward_std=rewards_std.per_row(rewards_std.std),
    )


@torch.no_grad()
def post_selection_correction(
    advantages: Tensor,
    group_ids: Tensor,
    is_annotation: Tensor | None,
    kept: Tensor,
    reference: SelectionReference,
    config: CorrectionConfig | None = None,
) -> AdvantageResult:
    """Stage E, for each group that lost rows, on its m kept policy rows and kept annotation:

        A <- A - mean_kept(A)
        if A* < 0:  c = -A*;  A* <- 0;  A_i <- A_i - c / m      (sum stays 0)
        if sp_ref >= min_reward_std:  A <- A * clip(rms_ref / (rms_kept(A) + eps), 0.25, 1)

    Groups that kept every row are unchanged; dropped rows get advantage 0.
    """
    config = config or CorrectionConfig()
    check_rows(group_ids, advantages=advantages, kept=kept)
    kept = kept.bool()
    annotation = torch.zeros_like(kept) if is_annotation is None else is_annotation.bool()
    index, num_groups = dense_group_index(group_ids)
    weight = kept.to(advantages.dtype)
    kept_count = group_sum(weight, index, num_groups)
    lost = (kept_count < group_sum(torch.ones_like(weight), index, num_groups))[index]
    centre = group_sum(advantages * weight, index, num_groups) / kept_count.clamp_min(1)
    centred = advantages - centre[index]
    projected = kept & annotation & (centred < 0)
    removed = group_sum(torch.where(projected, -centred, 0.0), index, num_groups)
    kept_policy = kept & ~annotation
    m = group_sum(kept_policy.to(advantages.dtype), index, num_groups)
    centred = torch.where(projected, 0.0, centred)
    centred = torch.where(kept_policy, centred - (removed / m.clamp_min(1))[index], centred)
    rms = (group_sum(centred**2 * weight, index, num_groups) / kept_count.clamp_min(1)).sqrt()
    scale = (reference.rms / (rms[index] + config.eps)).clamp(config.min_scale, config.max_scale)
    scale = torch.where(reference.reward_std >= config.min_reward_std, scale, 1.0)
    corrected = torch.where(kept & lost, centred * scale, advantages)
    out = torch.where(kept, corrected, 0.0)
    group_scale = group_sum(scale * weight, index, num_groups) / kept_count.clamp_min(1)
    group_lost = group_sum(lost.to(advantages.dtype), index, num_groups) > 0
    scales = group_scale[group_lost & (kept_count > 0)]
    metrics = {
        "correct/groups": float(group_lost.sum()),
        "correct/projections": float((projected & lost).sum()),
        "correct/scale_mean": float(scales.mean()) if scales.numel() else 1.0,
        "correct/scale_min": float(scales.min()) if scales.numel() else 1.0,
    }
    return AdvantageResult(out, metrics)
