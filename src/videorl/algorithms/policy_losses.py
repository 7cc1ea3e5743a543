"""The policy-loss registry: how the per-token surrogate of sampled rows is formed
(docs/methods.md#policy-loss), selected by `algorithm.loss.name`.

A registered loss maps the micro-batch's log-probs to its per-token surrogate and the
statistics the metrics report:
`fn(logp [B,T], old_logp [B,T], advantages [B,T], mask [B,T], config) -> PolicyTerms`.
`policy_loss` (`loss.py`) does everything around it the same way for every entry: padding,
the off-policy (TaRO constructed) rows' `-A * logp`, the KL and entropy terms, and the
aggregation. Each entry carries its published defaults for the clip range and the
aggregation, applied when the config leaves them unset.

Built in: `ppo` (`loss.py`: token ratio, clip, dual clip) and `gspo` (`gspo.py`: sequence
ratio, sequence clipping). Register your own with `@register_policy_loss("name", ...)`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from torch import Tensor

from videorl.registry import Registry

__all__ = [
    "POLICY_LOSSES",
    "PolicyLoss",
    "PolicyTerms",
    "get_policy_loss",
    "policy_loss_names",
    "register_policy_loss",
]

_BUILTIN_MODULES = ("videorl.algorithms.loss", "videorl.algorithms.gspo")


@dataclass(frozen=True)
class PolicyTerms:
    """A loss's surrogate and statistics (detached except `loss`).

    `loss`: per-token surrogate, shaped like `logp`. `ratio`, `clipped`, `dual`: the
    importance ratio, whether the clip binds and whether the dual clip binds, either per
    token (shaped like `logp`) or per sequence (`[B]`); the metrics average them over the
    sampled tokens or the sampled sequences accordingly.
    """

    loss: Tensor
    ratio: Tensor
    clipped: Tensor
    dual: Tensor

    @property
    def sequence_level(self) -> bool:
        return self.ratio.dim() == 1


@dataclass(frozen=True)
class PolicyLoss:
    """A registered loss: its name, function and the published clip range and aggregation
    it defaults to."""

    name: str
    fn: Callable[..., PolicyTerms]
    clip_low: float
    clip_high: float
    aggregation: str

    def __call__(self, *args: Any, **kwargs: Any) -> PolicyTerms:
        return self.fn(*args, **kwargs)


POLICY_LOSSES: Registry[PolicyLoss] = Registry(
    "policy loss", "algorithm.loss.name", _BUILTIN_MODULES
)


def register_policy_loss(
    name: str, *, clip_low: float, clip_high: float, aggregation: str
) -> Callable[[Callable[..., PolicyTerms]], Callable[..., PolicyTerms]]:
    """Decorator that registers a loss under `name` with its default clip range and
    aggregation; the function is returned as is."""

    def decorate(fn: Callable[..., PolicyTerms]) -> Callable[..., PolicyTerms]:
        POLICY_LOSSES.add(name, PolicyLoss(name, fn, clip_low, clip_high, aggregation), fn)
        return fn

    return decorate


def policy_loss_names() -> list[str]:
    """The registered loss names, sorted."""
    return POLICY_LOSSES.names()


def get_policy_loss(name: str) -> PolicyLoss:
    """The loss registered under `name`; an unknown name is a ConfigError listing the
    valid ones."""
    return POLICY_LOSSES.lookup(name)
