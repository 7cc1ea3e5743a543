"""GSPO: Group Sequence Policy Optimization (Zheng et al. 2025, arXiv 2507.18071), a
policy-loss registry entry (`algorithm.loss.name: gspo`, docs/methods.md#policy-loss).

The importance ratio is the length-normalised sequence likelihood ratio

    s_i = (pi(y_i|x) / pi_old(y_i|x))^(1/|y_i|) = exp((1/|y_i|) sum_t (logp_t - old_logp_t))

and it is clipped per sequence, with GSPO's small ranges (paper section 5.1:
eps_low 3e-4, eps_high 4e-4). The gradient is taken in GSPO's token form (paper eq. 8-10,
"GSPO-token" with sequence advantages):

    s_i,t = sg[s_i] * pi(y_i,t) / sg[pi(y_i,t)]       (value s_i, gradient s_i * d logp_t)
    l_i,t = max(-A_i,t * s_i,t, -A_i,t * clip(s_i,t, 1 - eps_low, 1 + eps_high))

aggregated `seq-mean-token-mean` (mean over each sequence's tokens, then over sequences),
so a sequence's gradient is `s_i A_i (1/|y_i|) sum_t d logp_t` when unclipped, 0 when the
clip binds. As in verl's `compute_policy_loss_gspo` (`verl/trainer/ppo/core_algos.py`):
no dual clip, and the log-ratio is clamped at 10 before `exp`.

With one token per sequence `s_i` is that token's ratio, so GSPO equals PPO (without the
dual clip, same clip range and aggregation): `tests/algorithms/test_gspo.py` pins it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import Tensor

from videorl.algorithms.policy_losses import PolicyTerms, register_policy_loss

if TYPE_CHECKING:
    from videorl.algorithms.loss import PolicyLossConfig

GSPO_CLIP_LOW = 3e-4  # GSPO paper section 5.1; verl examples/gspo_trainer clip_ratio_low
GSPO_CLIP_HIGH = 4e-4
MAX_LOG_SEQUENCE_RATIO = 10.0  # verl: torch.clamp(log_seq_importance_ratio, max=10.0)


def sequence_log_ratio(logp: Tensor, old_logp: Tensor, mask: Tensor) -> Tensor:
    """`[B]` `(1/|y_i|) sum_t mask * (logp - old_logp)`; a row without tokens gives 0."""
    weight = mask.to(logp.dtype)
    return ((logp - old_logp) * weight).sum(-1) / weight.sum(-1).clamp_min(1)


@register_policy_loss(
    "gspo", clip_low=GSPO_CLIP_LOW, clip_high=GSPO_CLIP_HIGH, aggregation="seq-mean-token-mean"
)
def gspo_terms(
    logp: Tensor, old_logp: Tensor, advantages: Tensor, mask: Tensor, config: PolicyLossConfig
) -> PolicyTerms:
    """GSPO's per-token surrogate (module docstring); `ratio` and `clipped` are reported
    per sequence: `s_i`, and whether the clip binds for the row."""
    if logp.dim() != 2:
        raise ValueError(
            f"algorithm.loss.name='gspo' scores the sampled token only: logp must be [B, T], "
            f"got {tuple(logp.shape)}; use algorithm.loss.name=ppo for top-k distillation"
        )
    seq_log_ratio = sequence_log_ratio(logp, old_logp, mask).detach()
    log_ratio = logp - logp.detach() + seq_log_ratio.unsqueeze(-1)
    ratio = log_ratio.clamp(max=MAX_LOG_SEQUENCE_RATIO).exp()
    unclipped = -advantages * ratio
    low, high = config.clip
    clipped = -advantages * ratio.clamp(1 - low, 1 + high)
    loss = torch.maximum(unclipped, clipped)
    binds = ((clipped > unclipped) & mask.bool()).any(-1)
    sequence_ratio = seq_log_ratio.clamp(max=MAX_LOG_SEQUENCE_RATIO).exp()
    return PolicyTerms(
        loss=loss,
        ratio=sequence_ratio,
        clipped=binds.detach(),
        dual=torch.zeros_like(binds),
    )
