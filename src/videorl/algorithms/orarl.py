"""OraRL, annotations as rollouts: advantage stages A-C (docs/methods.md#orarl).

Each group holds n policy rows and at most one annotation row (the serialized ground truth,
flagged `is_annotation`). The stages, each a pure function over the whole batch:

A. `on_policy_baseline`: `mu = mean_i r_i` over policy rows only; `A_i = r_i - mu`.
B. `directional_gain`: `g = clip((std(r_1..r_n, r*) / (std(r_1..r_n) + eps)) ** gamma, 1, 4)`
   multiplies the positive policy advantages, which are then re-centred to mean 0.
C. `annotation_anchor`: `A* = min(scale * clip((r* - mu) / max(r*, eps), 0, 1) ** beta, cap)`
   with `cap = clip(1.2 * best, 0.05, 1.0)`, best the largest positive policy advantage.

`orarl_advantages` (registered as `orarl`) composes A-C. Stages D (sign-balanced selection)
and E (post-selection correction) act on the kept rows and live in `selection.py`; they are
re-exported here so the whole method reads from one import.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated

import torch
from torch import Tensor

from videorl.algorithms.advantages import AdvantageResult, register_advantage
from videorl.algorithms.groups import check_rows, group_max, group_stats
from videorl.algorithms.selection import (
    CorrectionConfig,
    PruningConfig,
    SelectionReference,
    SelectionResult,
    check_divisible,
    post_selection_correction,
    row_scores,
    select_rows,
    selection_reference,
)
from videorl.config.constraints import Checked, Ge, Gt, Ordered
from videorl.errors import ConfigError

__all__ = [
    "AnchorConfig",
    "CorrectionConfig",
    "DirectionalGainConfig",
    "OraRLConfig",
    "PruningConfig",
    "SelectionReference",
    "SelectionResult",
    "annotation_anchor",
    "check_divisible",
    "directional_gain",
    "on_policy_baseline",
    "orarl_advantages",
    "post_selection_correction",
    "row_scores",
    "select_rows",
    "selection_reference",
]


@dataclass(frozen=True)
class DirectionalGainConfig(Checked):
    """Stage B. `gamma = 0` turns the gain off (g = 1)."""

    gamma: Annotated[float, Ge(0)] = 0.25
    """Strength of the directional gain; 0 = off (gain 1)."""
    min_gain: Annotated[float, Gt(0)] = 1.0
    """Lower clip of the gain (<= max_gain)."""
    max_gain: float = 4.0
    """Upper clip of the gain (>= min_gain)."""
    eps: Annotated[float, Gt(0)] = 1e-6
    """Numerical floor in the gain's denominator."""

    orders = (Ordered("min_gain", "max_gain", "0 < min_gain <= max_gain; defaults are 1 and 4"),)


@dataclass(frozen=True)
class AnchorConfig(Checked):
    """Stage C: `A* = min(scale * w, clip(cap_factor * best, cap_min, cap_max))`."""

    beta: Annotated[float, Ge(0)] = 2.0
    """Sharpness of the anchor weight w."""
    scale: Annotated[float, Ge(0)] = 2.0
    """Multiplier of w in the anchor advantage A*."""
    cap_factor: Annotated[float, Ge(0)] = 1.2
    """Cap on A* as a multiple of the best policy row's advantage."""
    cap_min: Annotated[float, Ge(0)] = 0.05
    """Lower clip of the cap (<= cap_max)."""
    cap_max: float = 1.0
    """Upper clip of the cap (>= cap_min)."""
    eps: Annotated[float, Gt(0)] = 1e-6
    """Numerical floor in the anchor's denominators."""

    orders = (Ordered("cap_min", "cap_max", "0 <= cap_min <= cap_max; defaults are 0.05 and 1.0"),)


@dataclass(frozen=True)
class OraRLConfig:
    """Stages B and C of `orarl_advantages` (stage A has no parameters). Nested mappings
    (from YAML) are converted to the stage configs."""

    gain: DirectionalGainConfig = field(default_factory=DirectionalGainConfig)
    """Stage B. `gamma = 0` turns the gain off (g = 1)."""
    anchor: AnchorConfig = field(default_factory=AnchorConfig)
    """Stage C: `A* = min(scale * w, clip(cap_factor * best, cap_min, cap_max))`."""

    def __post_init__(self) -> None:
        for name, cls in (("gain", DirectionalGainConfig), ("anchor", AnchorConfig)):
            value = getattr(self, name)
            if isinstance(value, Mapping):
                object.__setattr__(self, name, cls(**value))
            elif not isinstance(value, cls):
                raise ConfigError(
                    f"{name} must be a mapping or {cls.__name__}, got {type(value).__name__}"
                )


def _policy_rows(is_annotation: Tensor | None, rewards: Tensor) -> Tensor:
    if is_annotation is None:
        return torch.ones_like(rewards, dtype=torch.bool)
    return ~is_annotation.bool()


def _check_one_annotation_per_group(is_annotation: Tensor, group_ids: Tensor) -> None:
    stats = group_stats(is_annotation.double(), group_ids)
    per_group = stats.mean * stats.count
    if bool((per_group > 1).any()):
        bad = int(torch.unique(group_ids)[per_group > 1][0])
        raise ValueError(
            f"group {bad} has {int(per_group.max())} annotation rows; OraRL appends at most "
            "one annotation row per group"
        )


@torch.no_grad()
def on_policy_baseline(
    rewards: Tensor, group_ids: Tensor, is_annotation: Tensor | None = None
) -> AdvantageResult:
    """Stage A: `A_i = r_i - mu`, `mu = mean` of the group's policy rewards (annotation
    excluded). Annotation rows get 0 here; stage C sets them."""
    check_rows(group_ids, rewards=rewards)
    policy = _policy_rows(is_annotation, rewards)
    stats = group_stats(rewards, group_ids, include=policy)
    advantages = torch.where(policy, rewards - stats.per_row(stats.mean), 0.0)
    return AdvantageResult(advantages, {})


@torch.no_grad()
def directional_gain(
    advantages: Tensor,
    rewards: Tensor,
    group_ids: Tensor,
    is_annotation: Tensor | None = None,
    config: DirectionalGainConfig | None = None,
) -> AdvantageResult:
    """Stage B: `g = clip((sg / (sp + eps)) ** gamma, min_gain, max_gain)` with
    `sg = std({r_1..r_n, r*})`, `sp = std({r_1..r_n})` (unbiased); positive policy
    advantages are multiplied by g, then the policy advantages are re-centred to mean 0.
    A group without an annotation row has sg = sp, hence g = 1."""
    config = config or DirectionalGainConfig()
    check_rows(group_ids, advantages=advantages, rewards=rewards)
    policy = _policy_rows(is_annotation, rewards)
    all_rows = group_stats(rewards, group_ids)
    policy_rows = group_stats(rewards, group_ids, include=policy)
    ratio = all_rows.std / (policy_rows.std + config.eps)
    gain = (ratio**config.gamma).clamp(config.min_gain, config.max_gain)
    scaled = torch.where(policy & (advantages > 0), advantages * all_rows.per_row(gain), advantages)
    centre = group_stats(scaled, group_ids, include=policy)
    out = torch.where(policy, scaled - centre.per_row(centre.mean), advantages)
    metrics = {
        "orarl/gain_mean": float(gain.mean()) if gain.numel() else 1.0,
        "orarl/gain_max": float(gain.max()) if gain.numel() else 1.0,
    }
    return AdvantageResult(out, metrics)


@torch.no_grad()
def annotation_anchor(
    advantages: Tensor,
    rewards: Tensor,
    group_ids: Tensor,
    is_annotation: Tensor,
    config: AnchorConfig | None = None,
) -> AdvantageResult:
    """Stage C, the detached anchor of each annotation row:

        w    = clip((r* - mu) / max(r*, eps), 0, 1) ** beta      (0 when r* <= 0)
        raw  = scale * w
        cap  = clip(cap_factor * best, cap_min, cap_max)      (cap_min if no positive A_i)
        A*   = min(raw, cap)

    `mu` is the on-policy baseline of stage A and `best` the largest positive policy
    advantage after stage B. Policy rows pass through unchanged."""
    config = config or AnchorConfig()
    check_rows(group_ids, advantages=advantages, rewards=rewards, is_annotation=is_annotation)
    annotation = is_annotation.bool()
    _check_one_annotation_per_group(annotation, group_ids)
    policy = ~annotation
    stats = group_stats(rewards, group_ids, include=policy)
    mu = stats.per_row(stats.mean)
    # The formula has r* + eps; max(r*, eps) guards r* = 0 alike and leaves r* = 1 exact,
    # which the worked examples (w = 0.36, raw = 0.72, A* = 0.5) require to 1e-6.
    weight = ((rewards - mu) / rewards.clamp_min(config.eps)).clamp(0.0, 1.0) ** config.beta
    weight = torch.where(rewards > 0, weight, 0.0)  # an annotation scoring <= 0 anchors nothing
    raw = config.scale * weight
    best = group_max(
        torch.where(policy, advantages, 0.0), stats.index, stats.num_groups, initial=0.0
    )
    cap = (config.cap_factor * best).clamp(config.cap_min, config.cap_max)
    anchor = torch.minimum(raw, stats.per_row(cap))
    out = torch.where(annotation, anchor, advantages)
    count = int(annotation.sum())
    capped = int((annotation & (raw > anchor)).sum())
    metrics = {
        "orarl/anchor_mean": float(anchor[annotation].mean()) if count else 0.0,
        "orarl/anchor_weight_mean": float(weight[annotation].mean()) if count else 0.0,
        "orarl/anchor_capped_frac": capped / count if count else 0.0,
    }
    return AdvantageResult(out, metrics)


@register_advantage("orarl", kind="outcome", config_cls=OraRLConfig, config_key="orarl")
@torch.no_grad()
def orarl_advantages(
    rewards: Tensor,
    group_ids: Tensor,
    *,
    is_annotation: Tensor | None = None,
    config: OraRLConfig | None = None,
) -> AdvantageResult:
    """OraRL advantages per row (docs/methods.md#orarl, stages A -> B -> C)."""
    config = config or OraRLConfig()
    annotation = (
        torch.zeros_like(rewards, dtype=torch.bool)
        if is_annotation is None
        else is_annotation.bool()
    )
    baseline = on_policy_baseline(rewards, group_ids, annotation)
    gained = directional_gain(baseline.advantages, rewards, group_ids, annotation, config.gain)
    anchored = annotation_anchor(gained.advantages, rewards, group_ids, annotation, config.anchor)
    return AdvantageResult(anchored.advantages, {**gained.metrics, **anchored.metrics})
