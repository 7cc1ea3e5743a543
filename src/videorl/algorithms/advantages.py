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
from typing import Annotated, Any, Literal

import torch
from torch import Tensor

from videorl.algorithms.groups import GroupStats, check_rows, group_stats
from videorl.config.constraints import Checked, Gt
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


SingleRow = Literal["zero", "verl"]


@dataclass(frozen=True)
class GRPOConfig(Checked):
    """`algorithm.grpo`, read by `grpo`, `dr_grpo` and `rloo` (docs/methods.md#advantage-estimators):
    `std_eps` (grpo only) and what a group with a single row gets (`single_row`)."""

    std_eps: Annotated[float, Gt(0)] = 1e-6
    """Added to the group reward std before dividing; grpo only."""
    single_row: SingleRow = "zero"
    """A one-row group: zero (A = 0, nothing to compare with) or verl (mean 0, std 1: grpo A = r / (1 + std_eps), dr_grpo and rloo A = r)."""


def _outcome_metrics(name: str, advantages: Tensor, stats: GroupStats) -> dict[str, float]:
    """`zero_variance_groups`: groups of two or more rows that all got the same reward (A = 0
    exactly); `single_row_groups`: groups of one row."""
    zero_variance = stats.uniform & (stats.count > 1)
    return {
        f"{name}/advantage_mean": float(advantages.mean()) if advantages.numel() else 0.0,
        f"{name}/advantage_abs_max": float(advantages.abs().max()) if advantages.numel() else 0.0,
        f"{name}/zero_variance_groups": float(zero_variance.sum()),
        f"{name}/single_row_groups": float((stats.count == 1).sum()),
    }


def _single_row(stats: GroupStats, config: GRPOConfig) -> Tensor:
    """[B] True for the rows that are alone in their group and take verl's convention."""
    return stats.per_row(stats.count == 1) & (config.single_row == "verl")


@register_advantage("grpo", kind="outcome", config_cls=GRPOConfig, config_key="grpo")
@torch.no_grad()
def grpo(
    rewards: Tensor,
    group_ids: Tensor,
    *,
    is_annotation: Tensor | None = None,  # noqa: ARG001 - estimators are called with is_annotation=
    config: GRPOConfig | None = None,
) -> AdvantageResult:
    """GRPO (docs/methods.md#advantage-estimators): `A_i = (r_i - mean_g) / (std_g + eps)`,
    unbiased std.

    A group whose rewards are all equal (max == min) gets A = 0 exactly; a single-row group
    gets 0, or `r / (1 + eps)` with `single_row: verl` (verl's mean 0, std 1).
    """
    config = config or GRPOConfig()
    stats = group_stats(rewards, group_ids)
    centered = rewards - stats.per_row(stats.mean)
    advantages = centered / (stats.per_row(stats.std) + config.std_eps)
    alone = _single_row(stats, config)
    advantages = torch.where(alone, rewards / (1 + config.std_eps), advantages)
    return AdvantageResult(advantages, _outcome_metrics("grpo", advantages, stats))


@register_advantage("dr_grpo", kind="outcome", config_cls=GRPOConfig, config_key="grpo")
@torch.no_grad()
def dr_grpo(
    rewards: Tensor,
    group_ids: Tensor,
    *,
    is_annotation: Tensor | None = None,  # noqa: ARG001 - estimators are called with is_annotation=
    config: GRPOConfig | None = None,
) -> AdvantageResult:
    """Dr.GRPO (docs/methods.md#advantage-estimators): `A_i = r_i - mean_g`, no std division;
    equal rewards give A = 0 exactly; a single-row group gets 0, or `r` with
    `single_row: verl`."""
    config = config or GRPOConfig()
    stats = group_stats(rewards, group_ids)
    advantages = rewards - stats.per_row(stats.mean)
    advantages = torch.where(_single_row(stats, config), rewards, advantages)
    return AdvantageResult(advantages, _outcome_metrics("dr_grpo", advantages, stats))


@register_advantage("rloo", kind="outcome", config_cls=GRPOConfig, config_key="grpo")
@torch.no_grad()
def rloo(
    rewards: Tensor,
    group_ids: Tensor,
    *,
    is_annotation: Tensor | None = None,  # noqa: ARG001 - estimators are called with is_annotation=
    config: GRPOConfig | None = None,
) -> AdvantageResult:
    """RLOO (docs/methods.md#advantage-estimators): `A_i = r_i - mean_{j != i} r_j
    = n_g (r_i - mean_g) / (n_g - 1)`; equal rewards give A = 0 exactly; a single-row group
    has no other row and gets 0, or `r` with `single_row: verl` (verl leaves its score)."""
    config = config or GRPOConfig()
    check_rows(group_ids, rewards=rewards)
    stats = group_stats(rewards, group_ids)
    count = stats.per_row(stats.count)
    loo = count * (rewards - stats.per_row(stats.mean)) / (count - 1).clamp_min(1)
    advantages = torch.where(count > 1, loo, torch.zeros_like(loo))
    advantages = torch.where(_single_row(stats, config), rewards, advantages)
    return AdvantageResult(advantages, _outcome_metrics("rloo", advantages, stats))
