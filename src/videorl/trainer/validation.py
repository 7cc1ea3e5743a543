"""Validation inside training: mean@k and best@k of the reward over k samples per prompt."""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from videorl.distributed import barrier
from videorl.reduction import Summed
from videorl.rewards.batch import score_batch
from videorl.rollout.engine import HFEngine
from videorl.rollout.prompting import decode_prompts
from videorl.trainer.checkpoint import save_model_folder, write_atomically
from videorl.trainer.state import BestStep
from videorl.video.cache import MediaSource
from videorl.video.controls import ControlledVideos

if TYPE_CHECKING:
    from videorl.config import Config
    from videorl.data.records import TaskRecord
    from videorl.models.generate import SamplingParams
    from videorl.rewards.config import RewardConfig
    from videorl.trainer.state import TrainState


def mean_and_best_at_k(rewards: torch.Tensor) -> tuple[float, float]:
    """`rewards` [P, k]: mean@k = mean over all samples; best@k = mean over prompts of the max."""
    return float(rewards.mean()), float(rewards.max(dim=1).values.mean())


def validation_sampling(cfg: Config) -> SamplingParams:
    """k = `trainer.val_samples` samples per prompt at `trainer.val_temperature` /
    `trainer.val_top_p` (the rollout's values when null; temperature 0 = greedy)."""
    trainer, rollout = cfg.trainer, cfg.rollout
    return rollout.sampling(
        n=trainer.val_samples,
        temperature=rollout.temperature
        if trainer.val_temperature is None
        else trainer.val_temperature,
        top_p=rollout.top_p if trainer.val_top_p is None else trainer.val_top_p,
    )


@torch.no_grad()
def validate(state: TrainState) -> dict[str, Any]:
    """Sample k responses per validation prompt (`validation_sampling`) and score them with
    plain tIoU for temporal grounding (as evaluation and TaRO's validation do); with
    `trainer.val_controls`, again on each control's media (`control_metrics`)."""
    cfg = state.cfg
    reward = replace(cfg.reward, tg_shaping="iou")
    measure = functools.partial(
        sampled_rewards, state, params=validation_sampling(cfg), reward=reward
    )
    records, rewards, skipped = measure(state.videos)
    if not records:
        return {"val/skipped_media": Summed(skipped)}
    mean_k, best_k = mean_and_best_at_k(rewards)
    metrics: dict[str, Any] = {
        "val/reward_mean_at_k": mean_k,
        "val/reward_best_at_k": best_k,
        "val/skipped_media": Summed(skipped),
    }
    for family, index in family_rows(records).items():
        mean_f, best_f = mean_and_best_at_k(rewards[index])
        metrics[f"val/{family}/mean_at_k"] = mean_f
        metrics[f"val/{family}/best_at_k"] = best_f
    return {**metrics, **control_metrics(state, mean_k, measure)}


def family_rows(records: list[TaskRecord]) -> dict[str, list[int]]:
    """Family short name -> the row indices of its records."""
    by_family: dict[str, list[int]] = defaultdict(list)
    for i, record in enumerate(records):
        by_family[record.family.short].append(i)
    return by_family


def control_metrics(
    state: TrainState,
    real_mean: float,
    measure: Callable[[MediaSource], tuple[list[TaskRecord], torch.Tensor, int]],
) -> dict[str, float]:
    """For each of `trainer.val_controls`: the mean reward on the control's media and the
    video gain `val/video_gain/NAME` = `real_mean` - that mean (same records, same sampling)."""
    metrics = {}
    for control in state.cfg.trainer.val_controls:
        _, on_control, _ = measure(ControlledVideos(state.videos, control))
        metrics[f"val/control/{control}/mean_at_k"] = float(on_control.mean())
        metrics[f"val/video_gain/{control}"] = real_mean - float(on_control.mean())
    return metrics


def sampled_rewards(
    state: TrainState, videos: MediaSource, *, params: SamplingParams, reward: RewardConfig
) -> tuple[list[TaskRecord], torch.Tensor, int]:
    """(records that decoded, rewards [P, k] of `params.n` samples each, records skipped)
    of the validation set, its media read through `videos`."""
    cfg = state.cfg
    records, prompts, _, skipped, _ = decode_prompts(
        state.val_records, videos, state.policy, cfg.data
    )
    if not records:
        return records, torch.zeros(0, params.n), skipped
    # Only rank 0 validates; vLLM's data-parallel engines must all step together, so under
    # torchrun validation generates with the HF copy of the synced policy.
    engine = (
        HFEngine(state.logprob_model, share_prefill=state.cfg.rollout.share_prefill)
        if state.info.enabled
        else state.engine
    )
    texts = [
        state.policy.tokenizer.decode(t, skip_special_tokens=True)
        for g in engine.generate(prompts, params)
        for t in g.token_ids
    ]
    rows = [r for r in records for _ in range(params.n)]
    pool = state.pool if reward == cfg.reward else None  # a pool is bound to its config
    overall = score_batch(rows, texts, reward, pool=pool).overall
    return records, torch.tensor(overall).view(len(records), params.n), skipped


class Validator:
    """Validation inside the loop: every `trainer.val_every` steps when there are
    validation records, on rank 0 (the others wait); tracks the best step by
    `trainer.best_metric` (in `state.best`) and writes that model to `best/`."""

    def __init__(self, state: TrainState, run: Callable[[TrainState], dict[str, Any]]):
        self.every = state.cfg.trainer.val_every if state.val_records else 0
        self.run = run
        self.best_dir = Path(state.cfg.trainer.output_dir) / "best"

    def should_validate(self, step: int) -> bool:
        return bool(self.every) and step % self.every == 0

    def __call__(self, state: TrainState) -> dict[str, Any]:
        metrics: dict[str, Any] = {}
        if state.info.is_main:
            metrics = self.run(state)
            if self._improved(state, metrics):
                metrics["val/best_step"] = state.step
                write_atomically(
                    self.best_dir,
                    lambda tmp: save_model_folder(state.logprob_model, tmp),
                    replace=True,
                )
        barrier()
        return metrics

    @staticmethod
    def _improved(state: TrainState, metrics: dict[str, Any]) -> bool:
        """Remember the best validation step by `trainer.best_metric`; True when it improved."""
        name = state.cfg.trainer.best_metric
        value = metrics.get(name)
        if value is None or (state.best is not None and value <= state.best.value):
            return False
        state.best = BestStep(step=state.step, value=float(value), metric=name)
        return True
