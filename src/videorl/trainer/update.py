"""The policy update (docs/methods.md#policy-loss) in three parts: plan each mini-batch's
token-budget micro-batches (`plan_micro_batches`), the loss of one micro-batch
(`micro_batch_loss`), and the optimizer step (`optimizer_step`: global-norm clipping, a
non-finite step skipped). Old log-probs come first; one optimizer step per mini-batch."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

import torch

from videorl.algorithms.behaviour import BehaviourCorrection, BehaviourMode
from videorl.algorithms.loss import LossResult, PolicyLossConfig, policy_loss
from videorl.config import OptimConfig
from videorl.distributed import all_reduce
from videorl.models.batching import plan_rank_microbatches
from videorl.models.inputs import PromptEncoding
from videorl.models.loading import LoadedModel
from videorl.models.logprobs import logprobs_in_microbatches, rows_logprobs
from videorl.reduction import Metric, MetricValue, combine
from videorl.rollout.batch import RolloutBatch
from videorl.rollout.fingerprints import checked_prompts


@dataclass
class UpdateContext:
    """What the update needs besides the batch."""

    policy: LoadedModel
    optimizer: torch.optim.Optimizer
    optim: OptimConfig
    loss: PolicyLossConfig
    temperature: float
    reference: LoadedModel | None = None
    logprob_model: LoadedModel | None = None  # no-grad passes; an unsharded copy under FSDP
    autocast_dtype: torch.dtype | None = None
    world_size: int = 1
    sequence_parallel: int = 1  # ranks per sequence-parallel group: the same rows on each
    # async rollouts: the trainer's policy version (rows sampled by an older one are stale)
    # and the behaviour correction's cap and mode (algorithms/behaviour.py)
    policy_version: int = 0
    behaviour_is_cap: float = 5.0
    behaviour_is_mode: BehaviourMode = "truncate"


@dataclass(frozen=True)
class MicroBatch:
    """One forward-backward: rows with their advantages and reference log-probs [b, R].
    `old_logp` None: the old log-probs are this forward's own (detached, ratio 1).
    `weight` 0: an FSDP padding micro-batch (one dummy token) that lets a rank with fewer
    micro-batches join every collective while adding nothing to the loss or metrics.
    `loss_mask` [b, R]: the tokens the loss covers (None: every response token); 0 on a
    multi-turn row's tool turns, whose `response_token_types` the forward takes."""

    prompts: list[PromptEncoding]
    responses: list[torch.Tensor]
    advantages: torch.Tensor
    off_policy: torch.Tensor
    old_logp: torch.Tensor | None = None
    ref_logp: torch.Tensor | None = None
    weight: float = 1.0
    loss_mask: torch.Tensor | None = None
    response_token_types: list[torch.Tensor] | None = None
    behaviour: BehaviourCorrection | None = None

    @classmethod
    def padding(cls, pad_id: int) -> MicroBatch:
        one = torch.tensor([pad_id])
        return cls(
            [PromptEncoding(input_ids=one)],
            [one],
            advantages=torch.zeros(1, 1),
            off_policy=torch.zeros(1, dtype=torch.bool),
            weight=0.0,
        )


@dataclass
class _Averages:
    """Weighted running means of the update's metrics; skipped optimizer steps counted."""

    sums: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    weights: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    declared: dict[str, MetricValue] = field(default_factory=dict)  # by their own reduction
    skipped: int = 0

    def add(self, metrics: Mapping[str, MetricValue], weight: float = 1.0) -> None:
        for key, value in metrics.items():
            if isinstance(value, Metric):  # e.g. a maximum, declared so by its producer
                seen = self.declared.get(key)
                self.declared[key] = value if seen is None else combine([(seen, 1), (value, 1)])
                continue
            self.sums[key] += value * weight
            self.weights[key] += weight

    def result(self) -> dict[str, MetricValue]:
        means = {k: self.sums[k] / self.weights[k] for k in self.sums if self.weights[k] > 0}
        return {**means, **self.declared}


def _split(rows: list[int], parts: int) -> list[list[int]]:
    """Exactly `parts` mini-batches (some may be empty), so every rank takes as many steps."""
    size = max(1, math.ceil(len(rows) / parts))
    return [rows[i * size : (i + 1) * size] for i in range(parts)]


def _logprobs(
    ctx: UpdateContext,
    model: LoadedModel,
    batch: RolloutBatch,
    rows: list[int],
    where: str = "old-policy forward",
) -> torch.Tensor:
    """[B, R] no-grad log-probs of `rows` under `model` (zeros elsewhere); multi-turn rows
    over their whole trajectory, with every turn's media. The rows' inputs are checked
    against their rollout's first (`where` names the forward)."""
    out = torch.zeros(batch.num_rows, max((int(r.numel()) for r in batch.responses), default=0))
    if rows:
        prompts, types = checked_prompts(batch, where, rows), batch.response_token_types()
        logp = logprobs_in_microbatches(
            model,
            [prompts[i] for i in rows],
            [batch.responses[i] for i in rows],
            temperature=ctx.temperature,
            token_budget=ctx.optim.micro_batch_tokens,
            response_token_types=None if types is None else [types[i] for i in rows],
        )
        out[rows, : logp.shape[1]] = logp
    return out


def plan_micro_batches(
    ctx: UpdateContext,
    batch: RolloutBatch,
    mini: list[int],
    old_logp: torch.Tensor,
    ref_logp: torch.Tensor | None,
    own_old: set[int],
) -> list[MicroBatch]:
    """The mini-batch's rows in micro-batches of at most `optim.micro_batch_tokens` tokens,
    padded with zero-weight micro-batches to the most any rank has (multi-turn rows run
    padded, never packed: `rows_logprobs`); their inputs checked against the rollout's."""
    prompts, types = checked_prompts(batch, "loss forward", mini), batch.response_token_types()
    mask = batch.response_mask()
    sizes = [prompts[i].length + int(batch.responses[i].numel()) for i in mini]
    packed = ctx.policy.packing and types is None
    plan = plan_rank_microbatches(sizes, ctx.optim.micro_batch_tokens, packed=packed)
    micros = []
    for rows in ([mini[j] for j in m] for m in plan):
        if not rows:
            micros.append(MicroBatch.padding(ctx.policy.pad_token_id))
            continue
        width = max(int(batch.responses[i].numel()) for i in rows)
        micros.append(
            MicroBatch(
                [prompts[i] for i in rows],
                [batch.responses[i] for i in rows],
                advantages=batch.token_advantages()[rows, :width],
                off_policy=batch.off_policy[rows],
                old_logp=None if rows[0] in own_old else old_logp[rows, :width],
                ref_logp=None if ref_logp is None else ref_logp[rows, :width],
                loss_mask=mask[rows, :width],
                response_token_types=None if types is None else [types[i] for i in rows],
                behaviour=_behaviour(ctx, batch, rows, width),
            )
        )
    return micros


def _behaviour(
    ctx: UpdateContext, batch: RolloutBatch, rows: list[int], width: int
) -> BehaviourCorrection | None:
    """The behaviour correction of `rows` when the batch came from async workers."""
    if batch.behaviour_logp is None or batch.versions is None:
        return None
    return BehaviourCorrection(
        logp=batch.behaviour_logp[rows, :width],
        stale=batch.versions[rows] < ctx.policy_version,
        cap=ctx.behaviour_is_cap,
        mode=ctx.behaviour_is_mode,
    )


def micro_batch_loss(
    ctx: UpdateContext, micro: MicroBatch, tokens: float, sequences: int
) -> tuple[LossResult, float]:
    """The policy loss of one micro-batch (normalised by the whole mini-batch's `tokens` and
    `sequences`, summed over ranks) and its token weight."""
    device = next(ctx.policy.model.parameters()).device
    with torch.autocast(
        device.type, dtype=ctx.autocast_dtype, enabled=ctx.autocast_dtype is not None
    ):
        logp, entropy, mask = rows_logprobs(
            ctx.policy,
            micro.prompts,
            micro.responses,
            temperature=ctx.temperature,
            response_token_types=micro.response_token_types,
        )
    if micro.loss_mask is not None:
        mask = mask * micro.loss_mask.to(mask.device)
    mask = (mask * micro.weight).to(device)
    result = policy_loss(
        logp.float(),
        logp.detach() if micro.old_logp is None else micro.old_logp.to(device),
        micro.advantages.to(device),
        mask,
        config=ctx.loss,
        global_token_count=max(tokens, 1.0),
        num_sequences_global=max(sequences, 1),
        ref_logp=None if micro.ref_logp is None else micro.ref_logp.to(device),
        entropy=entropy.float(),
        off_policy=micro.off_policy.to(device),
        behaviour=micro.behaviour,
    )
    return result, float(mask.sum())


def optimizer_step(ctx: UpdateContext, step_loss: float) -> float | None:
    """Clip the gradients to `optim.grad_clip` global norm and step; returns the norm, or
    None when the loss or norm is non-finite (the same verdict on every rank: the step is
    skipped and its gradients dropped)."""
    params = [p for p in ctx.policy.model.parameters() if p.requires_grad]
    grad_norm = torch.nn.utils.clip_grad_norm_(params, ctx.optim.grad_clip)
    norm = float(grad_norm.full_tensor() if hasattr(grad_norm, "full_tensor") else grad_norm)
    if not (math.isfinite(step_loss) and math.isfinite(norm)):
        ctx.optimizer.zero_grad(set_to_none=True)
        return None
    ctx.optimizer.step()
    return norm


def update_policy(ctx: UpdateContext, batch: RolloutBatch) -> dict[str, MetricValue]:
    """PPO-style update over the rows of `batch`; returns averaged metrics.

    The token-mean loss divides by the response-token count of the whole mini-batch
    (summed over ranks), so the result does not depend on micro-batching or world size.
    Old log-probs: until the first optimizer step the policy *is* the old policy, so with
    one epoch the first mini-batch takes them from its own forward (detached: ratio 1) and
    only the later mini-batches' rows get a separate no-grad pass. An empty batch (a rank
    whose samples all failed) runs the same stages with padding micro-batches only.
    """
    mask = batch.response_mask()
    minis = _split(list(range(batch.num_rows)), ctx.optim.mini_batches)
    own_old = set(minis[0]) if ctx.optim.epochs == 1 else set()
    others = [i for i in range(batch.num_rows) if i not in own_old]
    old_logp = _logprobs(ctx, ctx.logprob_model or ctx.policy, batch, others, "old-policy forward")
    reference = ctx.reference if ctx.loss.kl_coef > 0 and batch.num_rows else None
    every = list(range(batch.num_rows))
    ref_logp = (
        None if reference is None else _logprobs(ctx, reference, batch, every, "reference forward")
    )
    averages = _Averages()
    ctx.policy.model.train()
    for epoch in range(ctx.optim.epochs):
        for mini in minis:
            # sums over ranks, each sequence-parallel group's rows counted once
            sp = ctx.sequence_parallel
            tokens = all_reduce(float(mask[mini].sum())) / sp
            sequences = int(all_reduce(float((mask[mini].sum(1) > 0).sum()))) // sp
            ctx.optimizer.zero_grad(set_to_none=True)
            own = own_old if epoch == 0 else set()
            step_loss = 0.0
            for micro in plan_micro_batches(ctx, batch, mini, old_logp, ref_logp, own):
                result, weight = micro_batch_loss(ctx, micro, tokens, sequences)
                # FSDP averages ranks; we want the sum over data-parallel groups (each group's
                # S ranks' gradients average to its loss's: trainer/sequence_parallel.py)
                (result.loss * (ctx.world_size // sp)).backward()
                step_loss += float(result.loss.detach())
                averages.add(result.metrics, weight)
            step_loss = all_reduce(step_loss) / sp
            norm = optimizer_step(ctx, step_loss)
            if norm is None:
                averages.skipped += 1
                continue
            averages.add({"actor/loss": step_loss, "actor/grad_norm": norm})
    metrics = averages.result()
    metrics["actor/skipped_nonfinite_steps"] = float(averages.skipped)
    metrics["actor/rows"] = float(batch.num_rows)
    return metrics
