"""On-policy distillation with verifier-gated token rewards: OPD, OPDVR, GRPD
(docs/methods.md#on-policy-distillation).

Per sampled response token o_t the teacher log-ratio `d_t = logp_T(o_t) - logp_S(o_t)`
(the student at the rollout temperature, the teacher at `teacher_temperature`, OPDVR's
`TEACHER_TEMPERATURE`) sets the magnitude; for OPDVR and GRPD the task verifier
sets the sign; GRPD scales each row by its group-relative verifier advantage. The token
reward is the token advantage: no discounting, baseline or whitening.

Top-k variant (`topk = k > 0`): the inputs are `[B,T,k]` log-probs of the student's own
top-k ids at each position, the reward of id j is
`-(logp_S(j) - logp_T(j)) * softmax_k(logp_S)(j)`, and the policy loss sums over the k ids.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Literal, get_args

import torch
from torch import Tensor

from videorl.algorithms.advantages import AdvantageResult, register_advantage
from videorl.algorithms.groups import check_rows, group_stats
from videorl.config.constraints import Checked, Ge, Gt
from videorl.errors import ConfigError

GateMode = Literal["default", "inverse"]
GATE_MODES: tuple[str, ...] = get_args(GateMode)


@dataclass(frozen=True)
class DistillConfig(Checked):
    """`topk`: 0 = sampled token, k > 0 = top-k ids. `threshold`: a row is correct iff its
    verifier score > threshold. `gate_mode`: `default` or `inverse` (ablation: swapped
    gate). `group_std`: GRPD divides the group-relative advantage by the group std.
    `baseline`: GRPD's u >= 0 in `|a_i| + u`. `teacher_temperature`: the teacher's
    log-probs are `log_softmax(logits / teacher_temperature)`, apart from the rollout
    temperature the student's use (OPDVR's `TEACHER_TEMPERATURE`, 1.0 in opdvr.sh / grpd.sh).
    `teacher_engine`: `hf` scores the student's tokens with a Hugging Face forward of the
    teacher (as OPDVR's verl reward-model worker does), `vllm` with a vLLM engine of it
    (prompt log-probs of prompt + response; temperature 1.0 only: vLLM applies none to them)."""

    topk: Annotated[int, Ge(0)] = 0
    """Teacher distribution: 0 = the sampled token only (the trainer supports 0 only)."""
    threshold: float = 0.0
    """A row is correct when its verifier score exceeds this."""
    gate_mode: GateMode = "default"
    """default (verifier gating as published) or inverse (the swapped-gate ablation)."""
    group_std: bool = False
    """GRPD: divide the group-relative advantage by the group std."""
    baseline: Annotated[float, Ge(0)] = 0.0
    """GRPD's u in `|a_i| + u`."""
    std_eps: Annotated[float, Gt(0)] = 1e-6
    """Added to the group std before dividing."""
    teacher_temperature: Annotated[float, Gt(0)] = 1.0
    """Temperature of the teacher's log-probs, apart from rollout.temperature (the student's):
    OPDVR's TEACHER_TEMPERATURE, 1.0 in its scripts."""
    teacher_engine: Literal["hf", "vllm"] = "hf"
    """What scores the teacher's log-probs: hf (a forward of model.teacher_path) or vllm (a vLLM
    engine of it; falls back to hf with a warning where vLLM cannot run it)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.teacher_engine == "vllm" and self.teacher_temperature != 1.0:
            raise ConfigError(
                f"teacher_temperature={self.teacher_temperature} with teacher_engine=vllm: "
                "vLLM's prompt log-probs are taken at temperature 1.0 (it applies no "
                "temperature to them); set teacher_engine=hf for another teacher temperature"
            )


def _per_row(values: Tensor, like: Tensor) -> Tensor:
    """Broadcast a `[B]` tensor against `like [B, ...]`."""
    return values.view(-1, *([1] * (like.dim() - 1)))


@torch.no_grad()
def token_rewards(
    teacher_logp: Tensor, student_logp: Tensor, mask: Tensor, *, topk: int = 0
) -> Tensor:
    """`d_t = logp_T - logp_S` per token (`[B,T]`), or for `topk = k > 0` per id
    `(logp_T(j) - logp_S(j)) * softmax_k(logp_S)(j)` (`[B,T,k]`); 0 outside `mask`."""
    expected = mask.shape if topk == 0 else (*mask.shape, topk)
    for name, tensor in (("teacher_logp", teacher_logp), ("student_logp", student_logp)):
        if tuple(tensor.shape) != tuple(expected):
            raise ValueError(
                f"{name} has shape {tuple(tensor.shape)}, expected {tuple(expected)} for "
                f"topk={topk} and mask {tuple(mask.shape)}"
            )
    reward = teacher_logp - student_logp
    if topk:
        reward = reward * torch.softmax(student_logp, dim=-1)
    weight = mask.to(reward.dtype)
    return reward * (weight if topk == 0 else weight.unsqueeze(-1))


@torch.no_grad()
def verifier_gate(
    rewards: Tensor, scores: Tensor, *, threshold: float = 0.0, mode: str = "default"
) -> tuple[Tensor, Tensor]:
    """OPDVR's ReLU gate keyed by the verifier. A row is correct iff `score > threshold`;
    `default`: correct -> max(d, 0), incorrect -> min(d, 0); `inverse` swaps the two.
    Returns `(gated rewards, correct [B] bool)`."""
    if mode not in GATE_MODES:
        raise ConfigError(
            f"algorithm.distill.gate_mode={mode!r} is not a gate mode; use {list(GATE_MODES)}"
        )
    correct = scores > threshold
    keep_positive = correct if mode == "default" else ~correct
    gated = torch.where(
        _per_row(keep_positive, rewards), rewards.clamp_min(0.0), rewards.clamp_max(0.0)
    )
    return gated, correct


@torch.no_grad()
def grpd_scale(
    scores: Tensor,
    group_ids: Tensor,
    *,
    group_std: bool = False,
    baseline: Annotated[float, Ge(0)] = 0.0,
    eps: float = 1e-6,
) -> Tensor:
    """GRPD's row scale `|a_i| + u`, with `a_i = s_i - mean_g(s)` (divided by
    `std_g(s) + eps` when `group_std`) the group-relative advantage of the verifier scores."""
    stats = group_stats(scores, group_ids)
    relative = scores - stats.per_row(stats.mean)
    if group_std:
        relative = relative / (stats.per_row(stats.std) + eps)
    return relative.abs() + baseline


def _metrics(
    raw: Tensor, gated: Tensor, mask: Tensor, correct: Tensor | None, scale: Tensor | None
) -> dict[str, float]:
    weight = mask.bool() if raw.dim() == mask.dim() else mask.bool().unsqueeze(-1).expand_as(raw)
    count = int(weight.sum())
    metrics = {"distill/reward_mean": float(gated[weight].mean()) if count else 0.0}
    if correct is not None:
        zeroed = weight & (raw != 0) & (gated == 0)
        metrics["distill/frac_correct"] = float(correct.double().mean()) if correct.numel() else 0.0
        metrics["distill/frac_zeroed"] = float(zeroed.sum()) / count if count else 0.0
    if scale is not None:
        metrics["distill/scale_mean"] = float(scale.mean()) if scale.numel() else 0.0
        metrics["distill/scale_min"] = float(scale.min()) if scale.numel() else 0.0
    return metrics


@torch.no_grad()
def distill_advantages(
    teacher_logp: Tensor,
    student_logp: Tensor,
    mask: Tensor,
    *,
    scores: Tensor | None,
    group_ids: Tensor | None,
    config: DistillConfig,
    gate: bool,
    scale: bool,
) -> AdvantageResult:
    """Token advantages `[B,T]` (`[B,T,k]` for top-k): the teacher reward, then the verifier
    gate when `gate`, then GRPD's `|a_i| + u` row scale when `scale`."""
    raw = token_rewards(teacher_logp, student_logp, mask, topk=config.topk)
    gated, correct, row_scale = raw, None, None
    if gate or scale:
        if scores is None or group_ids is None:
            raise ValueError("verifier-gated distillation needs `scores` and `group_ids`")
        check_rows(group_ids, scores=scores, teacher_logp=teacher_logp)
        if gate:
            gated, correct = verifier_gate(
                raw, scores, threshold=config.threshold, mode=config.gate_mode
            )
        if scale:
            row_scale = grpd_scale(
                scores,
                group_ids,
                group_std=config.group_std,
                baseline=config.baseline,
                eps=config.std_eps,
            )
            gated = gated * _per_row(row_scale.to(gated.dtype), gated)
    return AdvantageResult(gated, _metrics(raw, gated, mask, correct, row_scale))


def _register_variant(
    name: str, *, gate: bool, scale: bool, doc: str
) -> Callable[..., AdvantageResult]:
    """Register one distillation estimator: `distill_advantages` with its gate/scale flags."""

    def estimator(
        teacher_logp: Tensor,
        student_logp: Tensor,
        mask: Tensor,
        *,
        scores: Tensor | None = None,
        group_ids: Tensor | None = None,
        config: DistillConfig | None = None,
    ) -> AdvantageResult:
        return distill_advantages(
            teacher_logp,
            student_logp,
            mask,
            scores=scores,
            group_ids=group_ids,
            config=config or DistillConfig(),
            gate=gate,
            scale=scale,
        )

    estimator.__name__ = estimator.__qualname__ = name
    estimator.__doc__ = doc
    return register_advantage(name, kind="token", config_cls=DistillConfig, config_key="distill")(
        estimator
    )


opd = _register_variant(
    "opd", gate=False, scale=False, doc="OPD: token advantage `d_t = logp_T(o_t) - logp_S(o_t)`."
)
opdvr = _register_variant(
    "opdvr",
    gate=True,
    scale=False,
    doc="OPDVR: `max(d_t, 0)` on verifier-correct rows, `min(d_t, 0)` on incorrect ones.",
)
grpd = _register_variant(
    "grpd",
    gate=True,
    scale=True,
    doc="GRPD: the OPDVR-gated token rewards of row i times `|a_i| + u`.",
)
