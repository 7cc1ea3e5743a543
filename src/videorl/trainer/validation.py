"""Validation inside training: mean@k and best@k of the reward over k samples per prompt."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import torch

from videorl.models.generate import SamplingParams
from videorl.rewards.batch import score_batch
from videorl.rollout.engine import HFEngine
from videorl.rollout.prompting import decode_prompts

if TYPE_CHECKING:
    from videorl.trainer.state import TrainState


def mean_and_best_at_k(rewards: torch.Tensor) -> tuple[float, float]:
    """`rewards` [P, k]: mean@k = mean over all samples; best@k = mean over prompts of the max."""
    return float(rewards.mean()), float(rewards.max(dim=1).values.mean())


def validation_sampling(cfg: Any) -> SamplingParams:
    """k = `trainer.val_samples` samples per prompt at `trainer.val_temperature` /
    `trainer.val_top_p` (the rollout's values when null; temperature 0 = greedy)."""
    trainer, rollout = cfg.trainer, cfg.rollout
    temperature = (
        rollout.temperature if trainer.val_temperature is None else trainer.val_temperature
    )
    return SamplingParams(
        n=trainer.val_samples,
        max_new_tokens=rollout.max_new_tokens,
        temperature=temperature,
        top_p=rollout.top_p if trainer.val_top_p is None else trainer.val_top_p,
        top_k=rollout.top_k,
    )


@torch.no_grad()
def validate(state: TrainState) -> dict[str, Any]:
    """Sample k responses per validation prompt (`validation_sampling`) and score them."""
    cfg = state.cfg
    k = cfg.trainer.val_samples
    records, prompts, _, skipped, _ = decode_prompts(
        state.val_records, state.videos, state.policy, cfg.data
    )
    if not records:
        return {"val/skipped_media": float(skipped)}
    params = validation_sampling(cfg)
    # Only rank 0 validates; vLLM's data-parallel engines must all step together, so under
    # torchrun validation generates with the HF copy of the synced policy.
    engine = (
        HFEngine(state.engine.loaded, share_prefill=state.cfg.rollout.share_prefill)
        if state.info.enabled
        else state.engine
    )
    generations = engine.generate(prompts, params)
    texts = [
        state.policy.tokenizer.decode(t, skip_special_tokens=True)
        for g in generations
        for t in g.token_ids
    ]
    rows = [r for r in records for _ in range(k)]
    # plain tIoU, as evaluation (METHODS 1.1) and TaRO's validation (split "test") use it
    reward = replace(cfg.reward, tg_shaping="iou")
    pool = state.pool if reward == cfg.reward else None  # a pool is bound to its config
    rewards = torch.tensor(score_batch(rows, texts, reward, pool=pool).overall).view(
        len(records), k
    )
    mean_k, best_k = mean_and_best_at_k(rewards)
    metrics: dict[str, Any] = {
        "val/reward_mean_at_k": mean_k,
        "val/reward_best_at_k": best_k,
        "val/skipped_media": float(skipped),
    }
    by_family: dict[str, list[int]] = defaultdict(list)
    for i, record in enumerate(records):
        by_family[record.family.short].append(i)
    for family, index in by_family.items():
        mean_f, best_f = mean_and_best_at_k(rewards[index])
        metrics[f"val/{family}/mean_at_k"] = mean_f
        metrics[f"val/{family}/best_at_k"] = best_f
    return metrics
