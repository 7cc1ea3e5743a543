"""The policy update: old log-probs, mini-batches, token-budget micro-batches, one
optimizer step per mini-batch with global-norm clipping (METHODS.md section 3)."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

import torch

from videorl.algorithms.loss import PolicyLossConfig, policy_loss
from videorl.config import OptimConfig
from videorl.models.batching import plan_microbatches
from videorl.models.inputs import collate
from videorl.models.loading import LoadedModel
from videorl.models.logprobs import response_logprobs
from videorl.trainer.batch import RolloutBatch
from videorl.trainer.stages import row_logprobs


@dataclass
class UpdateContext:
    """What the update needs besides the batch."""

    policy: LoadedModel
    optimizer: torch.optim.Optimizer
    optim: OptimConfig
    loss: PolicyLossConfig
    temperature: float
    reference: LoadedModel | None = None
    autocast_dtype: torch.dtype | None = None
    world_size: int = 1


def _all_reduce_sum(value: float, world_size: int) -> float:
    if world_size <= 1:
        return value
    import torch.distributed as dist

    tensor = torch.tensor([value], dtype=torch.float64)
    dist.all_reduce(tensor)
    return float(tensor.item())


def _split(rows: list[int], parts: int) -> list[list[int]]:
    size = math.ceil(len(rows) / parts)
    return [rows[i : i + size] for i in range(0, len(rows), size)]


def update_policy(ctx: UpdateContext, batch: RolloutBatch) -> dict[str, float]:
    """PPO-style update over the kept rows of `batch`; returns averaged metrics.

    The token-mean loss divides by the response-token count of the whole mini-batch
    (summed over ranks), so the result does not depend on micro-batching or world size.
    A non-finite loss or gradient norm skips that optimizer step (counted).
    """
    model = ctx.policy.model
    device = next(model.parameters()).device
    mask = batch.response_mask()
    prompts = batch.row_prompts()
    single_pass = ctx.optim.mini_batches == 1 and ctx.optim.epochs == 1
    old_logp = None if single_pass else row_logprobs(
        ctx.policy, prompts, batch.responses, temperature=ctx.temperature, token_budget=ctx.optim.micro_batch_tokens
    )
    ref_logp = None
    if ctx.reference is not None and ctx.loss.kl_coef > 0:
        ref_logp = row_logprobs(ctx.reference, prompts, batch.responses, temperature=ctx.temperature,
                                token_budget=ctx.optim.micro_batch_tokens)
    params = [p for p in model.parameters() if p.requires_grad]
    sums: dict[str, float] = defaultdict(float)
    weights: dict[str, float] = defaultdict(float)
    skipped = 0
    model.train()
    for _ in range(ctx.optim.epochs):
        for mini in _split(list(range(batch.num_rows)), ctx.optim.mini_batches):
            tokens = _all_reduce_sum(float(mask[mini].sum()), ctx.world_size)
            sequences = int(_all_reduce_sum(float((mask[mini].sum(1) > 0).sum()), ctx.world_size))
            ctx.optimizer.zero_grad(set_to_none=True)
            sizes = [prompts[i].length + int(batch.responses[i].numel()) for i in mini]
            step_loss = 0.0
            for micro_local in plan_microbatches(sizes, ctx.optim.micro_batch_tokens):
                micro = [mini[j] for j in micro_local]
                inputs, micro_mask = collate([prompts[i] for i in micro], [batch.responses[i] for i in micro],
                                             ctx.policy.pad_token_id)
                inputs = {k: v.to(device) for k, v in inputs.items()}
                width = micro_mask.shape[1]
                with torch.autocast(device.type, dtype=ctx.autocast_dtype, enabled=ctx.autocast_dtype is not None):
                    logp, entropy = response_logprobs(model, inputs, inputs["input_ids"][:, -width:],
                                                      temperature=ctx.temperature)
                old = logp.detach() if old_logp is None else old_logp[micro, :width].to(device)
                result = policy_loss(
                    logp.float(), old, batch.advantages[micro, :width].to(device), micro_mask.to(device),
                    config=ctx.loss, global_token_count=tokens, num_sequences_global=sequences,
                    ref_logp=None if ref_logp is None else ref_logp[micro, :width].to(device),
                    entropy=entropy.float(), off_policy=batch.off_policy[micro].to(device),
                )
                result.loss.backward()
                step_loss += float(result.loss.detach())
                weight = float(micro_mask.sum())
                for key, value in result.metrics.items():
                    sums[key] += value * weight
                    weights[key] += weight
            grad_norm = torch.nn.utils.clip_grad_norm_(params, ctx.optim.grad_clip)
            if not (math.isfinite(step_loss) and torch.isfinite(grad_norm)):
                skipped += 1
                ctx.optimizer.zero_grad(set_to_none=True)
                continue
            ctx.optimizer.step()
            sums["actor/loss"] += step_loss
            weights["actor/loss"] += 1
            sums["actor/grad_norm"] += float(grad_norm)
            weights["actor/grad_norm"] += 1
    metrics = {key: sums[key] / weights[key] for key in sums if weights[key] > 0}
    metrics["actor/skipped_nonfinite_steps"] = float(skipped)
    metrics["actor/rows"] = float(batch.num_rows)
    return metrics
