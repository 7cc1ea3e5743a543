"""The behaviour-policy correction of asynchronous RL (docs/async.md#objective).

A stale row was sampled by an older policy `pi_behav` (the worker's weights, version v)
than the proximal policy `pi_prox` (the trainer's weights before this update, version V >
v). The decoupled PPO objective (AReaL, Fu et al. 2025, eq. 5) keeps PPO's clip around the
proximal policy and corrects the staleness with a per-token importance weight:

    w_t = pi_prox(a_t) / pi_behav(a_t) = exp(logp_prox - logp_behav)
    l_t = w_t * max(-A r_t, -A clip(r_t, 1 - eps_low, 1 + eps_high)),  r_t = pi / pi_prox

`truncate` uses min(w_t, C) (verl's truncated importance sampling); `mask` gives w_t = 0
where w_t > C (AReaL's `behav_imp_weight_cap`). A row of the current version (staleness 0)
has pi_behav = pi_prox by construction and gets w = 1 exactly: their log-probs differ only
by float order between the worker's forward and the trainer's, which a weight would turn
into noise. A token no policy sampled (behaviour log-prob NaN: TaRO's forced prefix,
OraRL's annotation rows, with `rollout.behaviour_logp: sampling`) gets w = 1 too.

Worked example (C = 2): logp_prox = [-1.0, -0.5], logp_behav = [-1.2, -1.5] gives
w = [exp(0.2), exp(1.0)] = [1.2214, 2.7183]; truncate -> [1.2214, 2.0] (one token truncated);
mask -> [1.2214, 0.0].
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor

from videorl.reduction import MetricValue, maxed

_MAX_LOG_RATIO = 20.0  # exp(20) is finite in float32

BehaviourMode = Literal["truncate", "mask"]


@dataclass(frozen=True)
class BehaviourCorrection:
    """A micro-batch's behaviour log-probs [b, T] and which rows are stale [b] (sampled by
    an older version than the trainer's), with the cap and its mode."""

    logp: Tensor
    stale: Tensor
    cap: float = 5.0
    mode: BehaviourMode = "truncate"


@torch.no_grad()
def behaviour_weights(
    prox_logp: Tensor, correction: BehaviourCorrection, mask: Tensor
) -> tuple[Tensor, dict[str, MetricValue]]:
    """The weights w [b, T] (module docstring; 1 on current rows and padding) and their
    metrics over the stale response tokens: `async/is_weight_mean`, `async/is_weight_max`
    (before the cap) and `async/is_truncated_frac` (tokens whose w exceeded the cap)."""
    log_ratio = (prox_logp - correction.logp.to(prox_logp.device)).clamp(
        -_MAX_LOG_RATIO, _MAX_LOG_RATIO
    )
    raw = log_ratio.exp()
    over = raw > correction.cap
    capped = raw.clamp(max=correction.cap) if correction.mode == "truncate" else raw * ~over
    sampled = ~torch.isnan(correction.logp.to(prox_logp.device))
    stale = correction.stale.to(prox_logp.device).bool()[:, None] & mask.bool() & sampled
    weights = torch.where(stale, capped, torch.ones_like(raw))
    count = int(stale.sum())
    metrics: dict[str, MetricValue] = {"async/stale_tokens": float(count)}
    if count:
        metrics["async/is_weight_mean"] = float(raw[stale].double().mean())
        metrics["async/is_weight_max"] = maxed(float(raw[stale].max()))
        metrics["async/is_truncated_frac"] = float(over[stale].double().mean())
    return weights, metrics
