"""One training step (`train_step`), in the order of docs/design.md#one-training-step; each
stage is a function from `RolloutBatch` to `RolloutBatch`, called through the `Stages` table."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from videorl.algorithms.selection import PruningConfig
from videorl.config import AlgorithmConfig
from videorl.distributed import shard_indices
from videorl.reduction import MetricValue, draw_metrics
from videorl.rollout.batch import RolloutBatch
from videorl.trainer.draw import DrawAt, DrawStage, RewardStages, no_grad_settings, scored_draw
from videorl.trainer.dynamic_sampling import collect_groups
from videorl.trainer.metrics import StageTimer, rollout_metrics, step_metrics
from videorl.trainer.sequence_parallel import split_forwards
from videorl.trainer.stages import (
    add_teacher_logprobs,
    compute_advantages,
    select,
)
from videorl.trainer.state import TrainState
from videorl.trainer.subagents import with_subagent_rows
from videorl.trainer.update import UpdateContext, update_policy


@dataclass(frozen=True)
class StepResult(Mapping[str, Any]):
    """What a step returns: its metrics (each value by its declared reduction,
    `videorl.reduction`; the result reads as their mapping, `result["actor/loss"]`) and the
    ids of the records it trained on (None: a step left without rows trained on none)."""

    metrics: dict[str, Any]
    batch_ids: list[str] | None

    def __getitem__(self, key: str) -> Any:
        return self.metrics[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.metrics)

    def __len__(self) -> int:
        return len(self.metrics)


@dataclass(frozen=True)
class Stages(RewardStages):
    """Every stage `train_step` calls, through this table, so that a caller can substitute
    one (a fixed reward, a spy around the update, a rollout that stops the run) and still
    run the whole step, alone or in the loop:
    `LoopHooks(step=functools.partial(train_step, stages=replace(STAGES, score=...)))`.
    `draw` decodes, rolls out and rewards a draw of prompts (`trainer/draw.py`) through the
    reward stages this table extends (`RewardStages`: `score`, `temporal_contrast`,
    `length_rewards`, `sensitivity`); in `rollout.mode: async` the rollout workers draw
    instead, with the default reward stages."""

    draw: DrawStage = scored_draw
    teacher_logprobs: Callable[..., RolloutBatch] = add_teacher_logprobs
    advantages: Callable[[RolloutBatch, AlgorithmConfig], RolloutBatch] = compute_advantages
    select: Callable[[RolloutBatch, PruningConfig, int], RolloutBatch] = select
    update: Callable[[UpdateContext, RolloutBatch], dict[str, MetricValue]] = update_policy


STAGES = Stages()


def train_step(state: TrainState, indices: list[int], stages: Stages = STAGES) -> StepResult:
    """decode -> rollout (+ constructed, + annotation, + T-GRPO shuffled responses) -> rewards
    (+ temporal contrast, length terms, sensitivity) [-> dynamic sampling: drop
    zero-variance groups, refill] -> teacher log-probs -> advantages -> selection -> update
    -> weight sync. Every stage takes a batch and returns one; the step reads its metrics
    (skipped prompts included) from the batch it ends with."""
    cfg, timer = state.cfg, StageTimer()
    state.visual_caches.clear()  # e.g. validation's videos
    draw = functools.partial(_scored_draw, state, timer, stages)
    if cfg.algorithm.dynamic_sampling.enabled:
        batch = collect_groups(
            indices,
            draw,
            cfg.algorithm.dynamic_sampling,
            want=cfg.data.prompts_per_step // state.info.data_parallel_size,
            sampler=state.sampler,
            visual_caches=state.visual_caches,
        )
    else:
        batch = draw(indices, 0)
    if not batch.num_rows:  # every sample of this rank was bad (or no group had variance)
        return _empty_step(state, batch, stages)
    batch_ids = [r.id for r in batch.records]
    rollout_stats = rollout_metrics(batch, cfg.rollout.max_new_tokens)
    with timer("teacher"), _split_forwards(state):
        if cfg.algorithm.is_distillation:
            teacher = state.teacher
            assert teacher is not None, "build loads the teacher for distillation"
            batch = stages.teacher_logprobs(
                batch,
                state.logprob_model,
                teacher,
                teacher_temperature=cfg.algorithm.distill.teacher_temperature,
                teacher_engine=state.teacher_engine,
                **no_grad_settings(cfg),
            )
    with timer("advantage"):
        batch = stages.advantages(batch, cfg.algorithm)
        rows_before = batch.num_rows
        batch = stages.select(batch, cfg.algorithm.pruning, cfg.rollout.n)
        if cfg.rollout.include_subagent_in_loss:
            batch = with_subagent_rows(batch)
    with timer("update"), _split_forwards(state):
        update_stats = stages.update(_update_context(state), batch)
    lr = state.scheduler.get_last_lr()[0]  # the rate this step's update used
    _end_step(state)
    metrics = {
        **batch.metrics,
        **rollout_stats,
        **update_stats,
        **step_metrics(batch, rows_before, timer),
        "lr": lr,
    }
    return StepResult(metrics, batch_ids)


def _scored_draw(
    state: TrainState, timer: StageTimer, stages: Stages, indices: list[int], draw: int
) -> RolloutBatch:
    """This rank's share of `indices`, decoded, rolled out and rewarded (`trainer/draw.py`):
    by the trainer itself, or, in `rollout.mode: async`, taken from the rollout workers."""
    mine = [state.records[i] for i in shard_indices(indices, state.info)]
    if state.rollouts is not None:
        with timer("wait"):
            return state.rollouts.take(
                state.step, draw, epoch=state.sampler.epoch, records=mine, policy=state.policy
            )
    at = DrawAt(state.step, state.sampler.epoch, draw)
    return stages.draw(state.producer(), timer, stages, mine, at)


def _split_forwards(state: TrainState) -> contextlib.AbstractContextManager[None]:
    """The scoring forwards split over the rank's sequence-parallel group, if it has one."""
    models = (state.policy, state.logprob_model, state.reference, state.teacher)
    return split_forwards(state.info.sequence_group, *models)


def _empty_step(state: TrainState, batch: RolloutBatch, stages: Stages) -> StepResult:
    """A rank with no usable sample still joins the rollout's and the update's collectives;
    it reports the figures of its draws (prompts skipped, dynamic sampling's draws), not
    those of rows it does not train on."""
    with _split_forwards(state):
        stages.update(_update_context(state), batch)
    _end_step(state)
    return StepResult({**draw_metrics(batch.metrics), "step/skipped": 1.0}, None)


def _end_step(state: TrainState) -> None:
    """Drop this step's cached vision outputs, advance the LR, push the new weights (to the
    async workers: as version step + 1)."""
    state.visual_caches.clear()
    state.scheduler.step()
    state.engine.sync_weights(state.policy.model)
    if state.rollouts is not None:
        state.rollouts.publish(state.logprob_model.model, state.step + 1)


def _update_context(state: TrainState) -> UpdateContext:
    cfg = state.cfg
    return UpdateContext(
        policy=state.policy,
        optimizer=state.optimizer,
        optim=cfg.optim,
        loss=cfg.algorithm.loss,
        temperature=cfg.rollout.temperature,
        reference=state.reference,
        logprob_model=state.logprob_model,
        world_size=state.info.world_size,
        sequence_parallel=state.info.sequence_parallel,
        autocast_dtype=state.autocast_dtype,
        policy_version=state.step,
        behaviour_is_cap=cfg.algorithm.behaviour_is_cap,
        behaviour_is_mode=cfg.algorithm.behaviour_is_mode,
    )
