"""The policy loss: PPO clip with dual clip, off-policy rows, KL and entropy terms, and the
four aggregation modes (docs/methods.md#policy-loss).

`algorithm.loss.name` picks the surrogate from the policy-loss registry
(`policy_losses.py`): `ppo` (here) or `gspo` (`gspo.py`, sequence-level ratio). For `ppo`,
per response token, with `rho = exp(logp - old_logp)`:

    l = max(-A * rho, -A * clip(rho, 1 - eps_low, 1 + eps_high))
    l = min(l, -A * c)                     for A < 0 (dual clip, c = 3)
    l = -A * logp                          for constructed (off-policy) rows (TaRO, 2.3)
    l = l + kl_coef * KL(logp, ref) - entropy_coef * entropy

`policy_loss` returns a micro-batch's *contribution* to the loss of the whole optimizer
step: the token sum is divided by the global token count (`token-mean`) or the global
sequence count (`seq-mean-*`), so summing the micro-batch losses of every micro-batch and
data-parallel rank gives the full-batch loss, whatever the split. Gradient accumulation
just sums.

For the top-k distillation variant (2.2) pass `[B,T,k]` log-probs and advantages: the
per-token loss sums over the k ids.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal, get_args

import torch
from torch import Tensor

from videorl.algorithms.behaviour import BehaviourCorrection, behaviour_weights
from videorl.algorithms.policy_losses import PolicyTerms, get_policy_loss, register_policy_loss
from videorl.config.constraints import Between, Checked, Ge, Gt
from videorl.errors import ConfigError
from videorl.reduction import MetricValue

Aggregation = Literal[
    "token-mean", "seq-mean-token-mean", "seq-mean-token-sum", "seq-mean-token-sum-norm"
]
AGGREGATIONS: tuple[str, ...] = get_args(Aggregation)
KLType = Literal["k1", "k2", "abs", "k3", "k3_unclipped", "k1+", "abs+", "k3+"]
KL_TYPES: tuple[str, ...] = get_args(KLType)
_MAX_LOG_RATIO = 20.0  # exp(20) is finite in float32; keeps rho and k3 free of inf/NaN
K3_CLIP = 10.0  # verl / EasyR1 clamp the low-variance KL estimate to [-10, 10]
VIDEO_R1_LOG_CLIP = 10.0  # Video-R1 clamps ref - logp to [-10, 10] and leaves k3 unclipped


@dataclass(frozen=True)
class PolicyLossConfig(Checked):
    """`dual_clip` None disables the dual clip; `max_length` is the constant divisor of
    `seq-mean-token-sum-norm`; `kl_type` the KL estimator (`kl_penalty`); `name` the registered
    surrogate (`ppo`, `gspo`). `clip_low`, `clip_high` and `aggregation` left unset (null) take the
    named loss's published defaults: ppo 0.2 / 0.2, `token-mean`; gspo 3e-4 / 4e-4,
    `seq-mean-token-mean` (GSPO paper section 5.1; verl `compute_policy_loss_gspo`).
    `gspo` has no dual clip (verl's has none), so `dual_clip` applies to `ppo` only."""

    clip_low: Annotated[float | None, Between(0, 1, high_open=True)] = None
    """Lower ratio clip epsilon; null = the named loss's default."""
    clip_high: Annotated[float | None, Ge(0)] = None
    """Upper ratio clip epsilon; null = the named loss's default."""
    dual_clip: Annotated[float | None, Gt(1)] = 3.0
    """Dual-clip constant c for negative advantages (ppo only); null = off."""
    aggregation: Aggregation | None = None
    """How token losses reduce to a scalar; null = the named loss's default."""
    max_length: Annotated[int | None, Ge(1)] = None
    """Constant divisor (tokens) of seq-mean-token-sum-norm; null = none."""
    kl_coef: Annotated[float, Ge(0)] = 0.0
    """Weight of the KL penalty to the reference model; 0 = no reference pass."""
    kl_type: KLType = "k3"
    """KL estimator (verl's kl_loss_type: kl/k1, mse/k2, abs, low_var_kl/k3, k1+, abs+, k3+; Video-R1: k3_unclipped)."""
    entropy_coef: Annotated[float, Ge(0)] = 0.0
    """Weight of the entropy bonus."""
    name: str = "ppo"
    """Registered policy surrogate: ppo or gspo (or a registered plugin)."""

    def __post_init__(self) -> None:
        registered = get_policy_loss(self.name)
        for key in ("clip_low", "clip_high", "aggregation"):
            if getattr(self, key) is None:
                object.__setattr__(self, key, getattr(registered, key))
        super().__post_init__()  # the named loss's defaults filled in first
        if self.aggregation == "seq-mean-token-sum-norm" and not (self.max_length or 0) > 0:
            raise ConfigError(
                f"aggregation='seq-mean-token-sum-norm' needs max_length > 0, got "
                f"{self.max_length}; set it to the response length budget"
            )

    @property
    def clip(self) -> tuple[float, float]:
        """(clip_low, clip_high), never null once `__post_init__` filled the loss's defaults."""
        low, high = self.clip_low, self.clip_high
        assert low is not None and high is not None, "set by __post_init__"
        return low, high


@dataclass(frozen=True)
class LossResult:
    """`loss`: scalar contribution to the step's loss; `metrics`: micro-batch statistics
    (token means over this micro-batch; `actor/tokens` is its token count, for weighting)."""

    loss: Tensor
    metrics: dict[str, MetricValue]


def kl_penalty(logp: Tensor, ref_logp: Tensor, kind: str = "k3") -> Tensor:
    """Per-token KL estimate to a frozen reference, with x = ref - logp (docs/methods.md#policy-loss;
    verl's `core_algos.py: kl_penalty` names in brackets):

    - `k1` = logp - ref (`kl`, `k1`);
    - `k2` = (logp - ref)^2 / 2 (`mse`, `k2`): its gradient, logp - ref, is the unbiased one;
    - `abs` = |logp - ref| (`abs`);
    - `k3` = clip(exp(x) - x - 1, -10, 10), x clipped to [-20, 20] (verl's / EasyR1's
      `low_var_kl`, `k3`): a token far below the reference (x > ~2.5) gets no KL gradient;
    - `k3_unclipped` = exp(x) - x - 1 with x clipped to [-10, 10] (Video-R1's
      `grpo_trainer.py`): the estimate grows to exp(10) and keeps its gradient there;
    - `k1+`, `abs+`, `k3+` (verl's straight-through forms): the value of `k1`, `abs`, `k3`
      and the gradient of `k2`, `k2 - sg(k2) + sg(value)`.

    Example: logp = -6, ref = -1 (x = 5): k1 = -5, k2 = 12.5, abs = 5, k3 = 10,
    k3_unclipped = exp(5) - 6 = 142.4; d/dlogp: k3 0 (clipped), k3+ -5 (k2's logp - ref)."""
    base = kind.removesuffix("+")
    if kind not in KL_TYPES:
        raise ConfigError(f"algorithm.loss.kl_type={kind!r}; use one of {list(KL_TYPES)}")
    if base == "k1":
        value = logp - ref_logp
    elif base == "k2":
        value = 0.5 * (logp - ref_logp).square()
    elif base == "abs":
        value = (logp - ref_logp).abs()
    elif base == "k3":
        delta = (ref_logp - logp).clamp(-_MAX_LOG_RATIO, _MAX_LOG_RATIO)
        value = (delta.exp() - delta - 1).clamp(-K3_CLIP, K3_CLIP)
    else:
        delta = (ref_logp - logp).clamp(-VIDEO_R1_LOG_CLIP, VIDEO_R1_LOG_CLIP)
        value = delta.exp() - delta - 1
    if not kind.endswith("+"):
        return value
    k2 = 0.5 * (logp - ref_logp).square()
    return k2 - k2.detach() + value.detach()


def _per_row(values: Tensor, like: Tensor) -> Tensor:
    return values.view(-1, *([1] * (like.dim() - 1)))


def _aggregate(
    token_loss: Tensor,
    mask: Tensor,
    config: PolicyLossConfig,
    global_token_count: float | None,
    num_sequences_global: int | None,
) -> Tensor:
    weight = mask.to(token_loss.dtype)
    summed = torch.where(mask.bool(), token_loss, 0.0)  # padding may hold inf or NaN
    if config.aggregation == "token-mean":
        count = float(weight.sum()) if global_token_count is None else float(global_token_count)
        return summed.sum() / max(count, 1.0)
    tokens = weight.sum(-1)
    if config.aggregation == "seq-mean-token-mean":
        per_sequence = summed.sum(-1) / tokens.clamp_min(1)
    elif config.aggregation == "seq-mean-token-sum":
        per_sequence = summed.sum(-1)
    else:
        assert config.max_length is not None, "__post_init__ requires it for this aggregation"
        per_sequence = summed.sum(-1) / float(config.max_length)
    sequences = int((tokens > 0).sum()) if num_sequences_global is None else num_sequences_global
    return per_sequence.sum() / max(sequences, 1)


@register_policy_loss("ppo", clip_low=0.2, clip_high=0.2, aggregation="token-mean")
def ppo_terms(
    logp: Tensor,
    old_logp: Tensor,
    advantages: Tensor,
    mask: Tensor,  # noqa: ARG001 - policy losses are called with mask=
    config: PolicyLossConfig,
) -> PolicyTerms:
    """PPO's token-level clipped surrogate with dual clip (module docstring); `mask` is
    unused (every token is its own sample)."""
    ratio = (logp - old_logp).clamp(-_MAX_LOG_RATIO, _MAX_LOG_RATIO).exp()
    unclipped = -advantages * ratio
    low, high = config.clip
    clipped = -advantages * ratio.clamp(1 - low, 1 + high)
    loss = torch.maximum(unclipped, clipped)
    dual = torch.zeros_like(loss, dtype=torch.bool)
    if config.dual_clip is not None:
        bound = -advantages * config.dual_clip
        dual = (advantages < 0) & (loss > bound)
        loss = torch.where(dual, bound, loss)
    return PolicyTerms(
        loss=loss, ratio=ratio.detach(), clipped=(clipped > unclipped).detach(), dual=dual
    )


def policy_loss(
    logp: Tensor,
    old_logp: Tensor,
    advantages: Tensor,
    mask: Tensor,
    *,
    config: PolicyLossConfig,
    global_token_count: float | None = None,
    num_sequences_global: int | None = None,
    ref_logp: Tensor | None = None,
    entropy: Tensor | None = None,
    off_policy: Tensor | None = None,
    behaviour: BehaviourCorrection | None = None,
) -> LossResult:
    """The loss contribution of one micro-batch (module docstring for the formula).

    `logp`, `old_logp`, `ref_logp`: `[B,T]` (or `[B,T,k]` for top-k); `advantages`: same
    shape, or `[B]` broadcast to every token; `mask`, `entropy`: `[B,T]`; `off_policy`:
    `[B]` bool. `global_token_count` (token-mean) and `num_sequences_global` (seq-mean-*,
    rows with at least one response token) are the totals over the whole optimizer step,
    all micro-batches and data-parallel ranks; None means this micro-batch is the step.
    `behaviour` (async rows): the surrogate is weighted by pi_prox / pi_behav with `old_logp`
    as the proximal policy (`behaviour.py`, docs/async.md#objective).
    """
    if tuple(mask.shape) != tuple(logp.shape[:2]):
        raise ValueError(f"mask has shape {tuple(mask.shape)}, logp {tuple(logp.shape)}")
    if advantages.dim() == 1:
        advantages = _per_row(advantages, logp)
    # Zero the padding first, so that inf or NaN there reaches neither loss nor gradient.
    valid = mask.bool() if logp.dim() == 2 else mask.bool().unsqueeze(-1)
    logp, old_logp = torch.where(valid, logp, 0.0), torch.where(valid, old_logp, 0.0)
    advantages = torch.where(valid, advantages.to(logp.dtype), 0.0)
    if ref_logp is not None:
        ref_logp = torch.where(valid, ref_logp, 0.0)
    if entropy is not None:
        entropy = torch.where(mask.bool(), entropy, 0.0)
    terms = get_policy_loss(config.name)(logp, old_logp, advantages, mask, config)
    surrogate, behaviour_metrics = terms.loss, dict[str, MetricValue]()
    if behaviour is not None:
        weights, behaviour_metrics = behaviour_weights(old_logp, behaviour, mask)
        surrogate = surrogate * (weights if surrogate.dim() == 2 else weights.unsqueeze(-1))
    off_rows = torch.zeros(logp.shape[0], dtype=torch.bool, device=logp.device)
    if off_policy is not None:
        off_rows = off_policy.bool()
    loss = torch.where(_per_row(off_rows, logp), -advantages * logp, surrogate)
    kl = None if ref_logp is None else kl_penalty(logp, ref_logp, config.kl_type)
    if kl is not None and config.kl_coef > 0:
        loss = loss + config.kl_coef * kl
    if logp.dim() == 3:
        loss = loss.sum(-1)
    if entropy is not None and config.entropy_coef > 0:
        loss = loss - config.entropy_coef * entropy
    total = _aggregate(loss, mask, config, global_token_count, num_sequences_global)
    metrics = _metrics(terms, off_rows, mask, kl, entropy)
    return LossResult(total, {**metrics, **behaviour_metrics})


@torch.no_grad()
def _metrics(
    terms: PolicyTerms,
    off_rows: Tensor,
    mask: Tensor,
    kl: Tensor | None,
    entropy: Tensor | None,
) -> dict[str, float]:
    """Clip, dual-clip and ratio statistics over the sampled (not off-policy) tokens, or
    over the sampled sequences for a sequence-level loss (gspo)."""
    token_mask = mask.bool()
    id_mask = (
        token_mask if terms.loss.dim() == 2 else token_mask.unsqueeze(-1).expand_as(terms.loss)
    )
    if terms.sequence_level:
        sampled = token_mask.any(-1) & ~off_rows
    else:
        sampled = id_mask & ~_per_row(off_rows, id_mask)

    def mean(values: Tensor, where: Tensor) -> float:
        count = int(where.sum())
        return float(values.detach()[where].double().sum()) / count if count else 0.0

    metrics = {
        "actor/tokens": float(token_mask.sum()),
        "actor/off_policy_tokens": float((token_mask & off_rows.unsqueeze(-1)).sum()),
        "actor/clip_frac": mean(terms.clipped.double(), sampled),
        "actor/dual_clip_frac": mean(terms.dual.double(), sampled),
        "actor/ratio_mean": mean(terms.ratio, sampled),
        "actor/approx_kl": mean(terms.ratio - 1 - terms.ratio.log(), sampled),
    }
    if kl is not None:
        metrics["actor/kl"] = mean(kl, id_mask)
    if entropy is not None:
        metrics["actor/entropy"] = mean(entropy, token_mask)
    return metrics
