"""The advantage-estimator registry and the standard outcome estimators
(docs/methods.md#advantage-estimators).

Two kinds of estimator share one registry, selected by name in the config:

- *outcome* estimators map one scalar reward per row to one advantage per row (the trainer
  broadcasts it to the row's response tokens):
  `fn(rewards [B], group_ids [B], *, is_annotation [B] bool, config) -> AdvantageResult`;
- *token* estimators map teacher and student token log-probs to one advantage per token:
  `fn(teacher_logp [B,T], student_logp [B,T], mask [B,T], *, scores [B], group_ids [B],
  config) -> AdvantageResult` (see `videorl.algorithms.distill`).

Built in: `grpo`, `dr_grpo`, `rloo` (here), `orarl` (`orarl.py`), `opd`, `opdvr`, `grpd`
(`distill.py`). Register your own with `@register_advantage("name", kind="outcome")`.
The standard estimators treat every row of a group alike, annotation rows included; only
OraRL keeps the annotation row out of the baseline.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import Tensor

from videorl.algorithms.groups import GroupStats, check_rows, group_stats
from videorl.errors import ConfigError
from videorl.registry import Registry

__all__ = [
    "ADVANTAGES",
    "AdvantageResult",
    "Estimator",
    "GRPOConfig",
    "GroupStats",
    "dr_grpo",
    "get_estimator",
    "group_stats",
    "grpo",
    "register_advantage",
    "rloo",
]

EstimatorKind = Literal["outcome", "token"]
_KINDS = ("outcome", "token")
_BUILTIN_MODULES = ("videorl.algorithms.orarl", "videorl.algorithms.distill")


@dataclass(frozen=True)
class AdvantageResult:
    """Advantages (`[B]` for outcome estimators, `[B,T]` for token ones) and float metrics."""

    advantages: Tensor
    metrics: dict[str, float]


@dataclass(frozen=True)
class Estimator:
    """A registered estimator: its name, kind, function, config class (None: no knobs) and
    the `algorithm.<config_key>` YAML section its config is read from (None: the generic
    `algorithm.params` mapping, built by `make_config`)."""

    name: str
    kind: EstimatorKind
    fn: Callable[..., AdvantageResult]
    config_cls: type | None
    config_key: str | None = None

    def make_config(self, params: Mapping[str, Any] | None = None) -> Any:
        """Build this estimator's config from a mapping; unknown keys are a ConfigError."""
        params = dict(params or {})
        if self.config_cls is None:
            if params:
                raise ConfigError(
                    f"estimator={self.name!r} takes no parameters, got {sorted(params)}; "
                    "remove them"
                )
            return None
        known = {f.name for f in dataclasses.fields(self.config_cls)}
        unknown = sorted(set(params) - known)
        if unknown:
            raise ConfigError(
                f"estimator={self.name!r} has no parameter(s) {unknown}; valid: {sorted(known)}"
            )
        return self.config_cls(**params)

    def __call__(self, *args: Any, **kwargs: Any) -> AdvantageResult:
        return self.fn(*args, **kwargs)


ADVANTAGES: Registry[Estimator] = Registry(
    "advantage estimator", "algorithm.estimator", _BUILTIN_MODULES
)


def register_advantage(
    name: str, *, kind: EstimatorKind, config_cls: type | None = None, config_key: str | None = None
) -> Callable[[Callable[..., AdvantageResult]], Callable[..., AdvantageResult]]:
    """Decorator that registers an estimator under `name`; the function is returned as is.
    `config_key` names the typed `algorithm.*` section of its config (built-ins only)."""
    if kind not in _KINDS:
        raise ConfigError(f"estimator {name!r} has kind={kind!r}; use one of {list(_KINDS)}")

    def decorate(fn: Callable[..., AdvantageResult]) -> Callable[..., AdvantageResult]:
        ADVANTAGES.add(name, Estimator(name, kind, fn, config_cls, config_key), fn)
        return fn

    return decorate


def get_estimator(name: str) -> Estimator:
    """The estimator registered under `name`; an unknown name is a ConfigError that lists
    the valid names."""
    return ADVANTAGES.lookup(name)


@dataclass(frozen=True)
class GRPOConfig:
    """`std_eps`: added to the group std before dividing (docs/methods.md#advantage-estimators:
    1e-6)."""

    std_eps: float = 1e-6
    """Added to the group reward std before dividing (> 0)."""

    def __post_init__(self) -> None:
        if not self.std_eps > 0:
            raise ConfigError(
                f"std_eps={self.std_eps} must be > 0 to keep zero-variance groups finite; use 1e-6"
            )


def _outcome_metrics(name: str, advantages: Tensor, stats: GroupStats) -> dict[str, float]:
    zero_variance = (stats.std == 0) & (stats.count > 0)
    return {
        f"{name}/advantage_mean": float(advantages.mean()) if advantages.numel() else 0.0,
        f"{name}/advantage_abs_max": float(advantages.abs().max()) if advantages.numel() else 0.0,
        f"{name}/zero_variance_groups": float(zero_variance.sum()),
    }


@register_advantage("grpo", kind="outcome", config_cls=GRPOConfig, config_key="grpo")
@torch.no_grad()
def grpo(
    rewards: Tensor,
    group_ids: Tensor,
    *,
    is_annotation: Tensor | None = None,
    config: GRPOConfig | None = None,
) -> AdvantageResult:
    """GRPO (docs/methods.md#advantage-estimators): `A_i = (r_i - mean_g) / (std_g + eps)`,
    unbiased std.

    A zero-variance or single-row group gets A = 0.
    """
    config = config or GRPOConfig()
    stats = group_stats(rewards, group_ids)
    centered = rewards - stats.per_row(stats.mean)
    advantages = centered / (stats.per_row(stats.std) + config.std_eps)
    return AdvantageResult(advantages, _outcome_metrics("grpo", advantages, stats))


@register_advantage("dr_grpo", kind="outcome")
@torch.no_grad()
def dr_grpo(
    rewards: Tensor,
    group_ids: Tensor,
    *,
    is_annotation: Tensor | None = None,
    config: None = None,
) -> AdvantageResult:
    """Dr.GRPO (docs/methods.md#advantage-estimators): `A_i = r_i - mean_g`, no std division."""
    stats = group_stats(rewards, group_ids)
    advantages = rewards - stats.per_row(stats.mean)
    return AdvantageResult(advantages, _outcome_metrics("dr_grpo", advantages, stats))


@register_advantage("rloo", kind="outcome")
@torch.no_grad()
def rloo(
    rewards: Tensor,
    group_ids: Tensor,
    *,
    is_annotation: Tensor | None = None,
    config: None = None,
) -> AdvantageResult:
    """RLOO (docs/methods.md#advantage-estimators): `A_i = r_i - mean_{j != i} r_j
    = (n_g * r_i - sum_g) / (n_g - 1)`; a single-row group has no other row and gets 0."""
    check_rows(group_ids, rewards=rewards)
    stats = group_stats(rewards, group_ids)
    count = stats.per_row(stats.count)
    total = stats.per_row(stats.mean * stats.count)
    loo = (count * rewards - total) / (count - 1).clamp_min(1)
    advantages = torch.where(count > 1, loo, torch.zeros_like(loo))
    return AdvantageResult(advantages, _outcome_metrics("rloo", advantages, stats))
