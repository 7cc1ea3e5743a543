"""The policy update: old log-probs, mini-batches, token-budget micro-batches, one
optimizer step per mini-batch with global-norm clipping (METHODS.md section 3)."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

import torch

from videorl.algorithms.loss import PolicyLossConfig, policy_loss
from videorl.config import OptimConfig
from videorl.distributed import all_reduce
from videorl.models.batching import plan_microbatches
from videorl.models.inputs import PromptEncoding
from videorl.models.loading import LoadedModel
from videorl.models.logprobs import rows_logprobs
from videorl.rollout.batch import RolloutBatch
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
    logprob_model: LoadedModel | None = None  # no-grad passes; an unsharded copy under FSDP
    autocast_dtype: torch.dtype | None = None
    world_size: int = 1


def _split(rows: list[int], parts: int) -> list[list[int]]:
    """Exactly `parts` mini-batches (some may be empty), so every rank takes as many steps."""
    size = max(1, math.ceil(len(rows) / parts))
    return [rows[i * size : (i + 1) * size] for i in range(parts)]


def _dummy_micro(pad_id: int) -> tuple[PromptEncoding, torch.Tensor]:
    """A one-token row with zero weight: keeps FSDP collectives matched across ranks."""
    return PromptEncoding(input_ids=torch.tensor([pad_id])), torch.tensor([pad_id])


def _old_logprobs(
    ctx: UpdateContext, batch: RolloutBatch, prompts: list[PromptEncoding], rows: list[int]
) -> torch.Tensor:
    """[B, R] log-probs of `rows` under the policy before the update (zeros elsewhere);
    `prompts` are the batch's per-row prompts."""
    out = torch.zeros(batch.num_rows, max((int(r.numel()) for r in batch.responses), default=0))
    if rows:
        logp = row_logprobs(
            ctx.logprob_model or ctx.policy,
            [prompts[i] for i in rows],
            [batch.responses[i] for i in rows],
            temperature=ctx.temperature,
            token_budget=ctx.optim.micro_batch_tokens,
        )
        out[rows, : logp.shape[1]] = logp
    return out


def update_policy(ctx: UpdateContext, batch: RolloutBatch) -> dict[str, float]:
    """PPO-style update over the kept rows of `batch`; returns averaged metrics.

    The token-mean loss divides by the response-token count of the whole mini-batch
    (summed over ranks), so the result does not depend on micro-batching or world size.
    A non-finite loss or gradient norm skips that optimizer step (counted).

    Old log-probs: until the first optimizer step the policy *is* the old policy, so with
    one epoch the first mini-batch takes them from its own forward (detached: ratio 1) and
    only the later mini-batches' rows get a separate no-grad pass.
    """
    model = ctx.policy.model
    device = next(model.parameters()).device
    mask = batch.response_mask()
    prompts = batch.row_prompts()
    minis = _split(list(range(batch.num_rows)), ctx.optim.mini_batches)
    own_old = set(minis[0]) if ctx.optim.epochs == 1 else set()  # rows whose old = own forward
    old_logp = _old_logprobs(
        ctx, batch, prompts, [i for i in range(batch.num_rows) if i not in own_old]
    )
    ref_logp = None
    if ctx.reference is not None and ctx.loss.kl_coef > 0 and batch.num_rows:
        ref_logp = row_logprobs(
            ctx.reference,
            prompts,
            batch.responses,
            temperature=ctx.temperature,
            token_budget=ctx.optim.micro_batch_tokens,
        )
    params = [p for p in model.parameters() if p.requires_grad]
    sums: dict[str, float] = defaultdict(float)
    weights: dict[str, float] = defaultdict(float)
    skipped = 0
    model.train()
    for epoch in range(ctx.optim.epochs):
        for mini in minis:
            tokens = all_reduce(float(mask[mini].sum()))
            sequences = int(all_reduce(float((mask[mini].sum(1) > 0).sum())))
            ctx.optimizer.zero_grad(set_to_none=True)
            sizes = [prompts[i].length + int(batch.responses[i].numel()) for i in mini]
            micros = (
                plan_microbatches(sizes, ctx.optim.micro_batch_tokens, packed=ctx.policy.packing)
                if mini
                else []
            )
            micros += [[]] * (int(all_reduce(float(len(micros)), "max")) - len(micros))
            step_loss = 0.0
            for micro_local in micros:
                micro = [mini[j] for j in micro_local]
                rows = ([prompts[i] for i in micro], [batch.responses[i] for i in micro])
                if not micro:
                    rows = tuple([x] for x in _dummy_micro(ctx.policy.pad_token_id))
                with torch.autocast(
                    device.type, dtype=ctx.autocast_dtype, enabled=ctx.autocast_dtype is not None
                ):
                    logp, entropy, micro_mask = rows_logprobs(
                        ctx.policy, *rows, temperature=ctx.temperature
                    )
                if not micro:
                    micro_mask.zero_()
                width = micro_mask.shape[1]
                zeros = torch.zeros_like(micro_mask)
                own = not micro or (epoch == 0 and micro[0] in own_old)
                old = logp.detach() if own else old_logp[micro, :width].to(device)
                result = policy_loss(
                    logp.float(),
                    old,
                    batch.advantages[micro, :width].to(device) if micro else zeros.to(device),
                    micro_mask.to(device),
                    config=ctx.loss,
                    global_token_count=max(tokens, 1.0),
                    num_sequences_global=max(sequences, 1),
                    ref_logp=None
                    if ref_logp is None or not micro
                    else ref_logp[micro, :width].to(device),
                    entropy=entropy.float(),
                    off_policy=batch.off_policy[micro].to(device)
                    if micro
                    else zeros[:, 0].bool().to(device),
                )
                (
                    result.loss * ctx.world_size
                ).backward()  # FSDP averages over ranks; we want the sum
                step_loss += float(result.loss.detach())
                weight = float(micro_mask.sum())
                for key, value in result.metrics.items():
                    sums[key] += value * weight
                    weights[key] += weight
            step_loss = all_reduce(step_loss)
            grad_norm = torch.nn.utils.clip_grad_norm_(params, ctx.optim.grad_clip)
            norm = float(
                grad_norm.full_tensor() if hasattr(grad_norm, "full_tensor") else grad_norm
            )
            if not (
                math.isfinite(step_loss) and math.isfinite(norm)
            ):  # the same verdict on every rank
                skipped += 1
                ctx.optimizer.zero_grad(set_to_none=True)
                continue
            ctx.optimizer.step()
            sums["actor/loss"] += step_loss
            weights["actor/loss"] += 1
            sums["actor/grad_norm"] += norm
            weights["actor/grad_norm"] += 1
    metrics = {key: sums[key] / weights[key] for key in sums if weights[key] > 0}
    metrics["actor/skipped_nonfinite_steps"] = float(skipped)
    metrics["actor/rows"] = float(batch.num_rows)
    return metrics
