"""`videorl train`: the loop. One screen holds the whole step (`train_step`), in the order of
docs/design.md#one-training-step; each stage is a function from `RolloutBatch` to `RolloutBatch`."""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from videorl.config import Config, check_world_size
from videorl.config.loader import to_dict
from videorl.config.run import save_run_config
from videorl.distributed import (
    barrier,
    init_distributed,
    reduce_metrics,
    shard_indices,
    with_sequence_groups,
)
from videorl.errors import RolloutWorkerError
from videorl.models.visual_cache import clear_visual_caches
from videorl.rollout.batch import RolloutBatch
from videorl.trainer import checkpoint as ckpt
from videorl.trainer.async_rollout import AsyncRollouts
from videorl.trainer.build import build_state
from videorl.trainer.checkpoint import Checkpointer
from videorl.trainer.draw import ScoreStage, no_grad_settings, scored_draw
from videorl.trainer.dynamic_sampling import collect_groups
from videorl.trainer.interrupt import StepGuard, StopRequest
from videorl.trainer.metrics import (
    MetricsWriter,
    StageTimer,
    plot_reward_curves,
    rollout_metrics,
    step_metrics,
)
from videorl.trainer.progress import StepProgress
from videorl.trainer.run_dir import claim_run_dir, run_inputs
from videorl.trainer.sequence_parallel import split_forwards
from videorl.trainer.stages import add_teacher_logprobs, compute_advantages, score, select
from videorl.trainer.state import TrainState
from videorl.trainer.subagents import with_subagent_rows
from videorl.trainer.update import UpdateContext, update_policy
from videorl.trainer.validation import Validator, validate

console = Console()


@dataclass(frozen=True)
class Stages:
    """Stages `train_step` calls through this table, so that a caller can substitute one (a
    fixed reward, a spy around the update) and still run the whole step, alone or in the
    loop: `LoopHooks(step=functools.partial(train_step, stages=replace(STAGES, score=...)))`."""

    score: ScoreStage = score
    teacher_logprobs: Callable[..., RolloutBatch] = add_teacher_logprobs
    update: Callable[[UpdateContext, RolloutBatch], dict[str, float]] = update_policy


STAGES = Stages()


def train_step(state: TrainState, indices: list[int], stages: Stages = STAGES) -> dict[str, Any]:
    """decode -> rollout (+ constructed, + annotation, + T-GRPO shuffled responses) -> rewards
    (+ temporal contrast, length terms, sensitivity) [-> dynamic sampling: drop
    zero-variance groups, refill] -> teacher log-probs -> advantages -> selection -> update
    -> weight sync. Every stage takes a batch and returns one; the step reads its metrics
    (skipped prompts included) from the batch it ends with."""
    cfg, timer = state.cfg, StageTimer()
    clear_visual_caches(state.policy, state.reference, state.teacher)  # e.g. validation's videos
    draw = functools.partial(_scored_draw, state, timer, stages)
    if cfg.algorithm.dynamic_sampling.enabled:
        batch = collect_groups(
            indices,
            draw,
            cfg.algorithm.dynamic_sampling,
            want=cfg.data.prompts_per_step // state.info.data_parallel_size,
            sampler=state.sampler,
            models=(state.policy, state.reference, state.teacher),
            info=state.info,
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
        batch = compute_advantages(batch, cfg.algorithm)
        rows_before = batch.num_rows
        batch = select(batch, cfg.algorithm.pruning, cfg.rollout.n)
        if cfg.rollout.include_subagent_in_loss:
            batch = with_subagent_rows(batch)
    with timer("update"), _split_forwards(state):
        update_stats = stages.update(_update_context(state), batch)
    lr = state.scheduler.get_last_lr()[0]  # the rate this step's update used
    _end_step(state)
    return {
        **batch.metrics,
        **rollout_stats,
        **update_stats,
        **step_metrics(batch, rows_before, timer),
        "lr": lr,
        "batch_ids": batch_ids,
    }


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
    return scored_draw(
        state.producer(),
        timer,
        stages.score,
        mine,
        step=state.step,
        epoch=state.sampler.epoch,
        draw=draw,
    )


def _split_forwards(state: TrainState) -> contextlib.AbstractContextManager[None]:
    """The scoring forwards split over the rank's sequence-parallel group, if it has one."""
    models = (state.policy, state.logprob_model, state.reference, state.teacher)
    return split_forwards(state.info.sequence_group, *models)


def _empty_step(state: TrainState, batch: RolloutBatch, stages: Stages) -> dict[str, Any]:
    """A rank with no usable sample still joins the rollout's and the update's collectives."""
    with _split_forwards(state):
        stages.update(_update_context(state), batch)
    _end_step(state)
    counts = {
        k: v for k, v in batch.metrics.items() if k.startswith(("dynamic_sampling/", "data/"))
    }
    return {**counts, "step/skipped": 1.0}


def _end_step(state: TrainState) -> None:
    """Drop this step's cached vision outputs, advance the LR, push the new weights (to the
    async workers: as version step + 1)."""
    clear_visual_caches(state.policy, state.reference, state.teacher)
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


@dataclass(frozen=True)
class LoopHooks:
    """What differs between jobs that share `run_training` (RL; `videorl sft`): the step, the
    validation and what the progress shows. Data, models, checkpoints, resume, metric
    sinks, best/ and final/ are the loop's."""

    step: Callable[[TrainState, list[int]], dict[str, Any]] = train_step
    validate: Callable[[TrainState], dict[str, Any]] = validate
    reward_key: str = "reward/mean"  # the progress bar's and log line's reward and loss
    loss_key: str = "actor/loss"
    curve_keys: tuple[str, ...] = ()  # what reward_curves.png plots (default: the rewards)


# Per-step counts that the log shows as totals since the process started (a resumed run
# counts from its restart).
RUNNING_TOTALS = {"data/skipped_long_prompts": "data/skipped_long_prompts_total"}


def with_running_totals(metrics: dict[str, Any], totals: dict[str, float]) -> dict[str, Any]:
    """`metrics` with each count of `RUNNING_TOTALS` replaced by its total so far, which
    `totals` carries from step to step."""
    out = dict(metrics)
    for key, total in RUNNING_TOTALS.items():
        if key in out:
            totals[total] = totals.get(total, 0.0) + out.pop(key)
            out[total] = totals[total]
    return out


def run_training(
    cfg: Config,
    resume: str | None = None,
    overwrite: bool = False,
    hooks: LoopHooks | None = None,
) -> Path:
    """Train for `trainer.steps` steps; returns the final model folder (HF format).

    Under torchrun every rank runs this; rank 0 logs, validates and writes model folders.
    An output folder holding another run is refused unless resumed or `overwrite`.
    """
    hooks = hooks or LoopHooks()
    info = init_distributed(cfg.trainer.device)
    check_world_size(cfg.data, info.world_size, cfg.model.sequence_parallel_size)
    info = with_sequence_groups(info, cfg.model.sequence_parallel_size)
    claim_run_dir(
        cfg.trainer.output_dir,
        ckpt.resolve_resume(resume, cfg.trainer.output_dir),
        resume=resume is not None,
        overwrite=overwrite,
        info=info,
        steps=cfg.trainer.steps,
        inputs=run_inputs(cfg),
    )
    state = build_state(cfg, resume, info)
    if cfg.rollout.mode == "async":
        model, old = state.logprob_model.model, state.async_weights
        state.rollouts = AsyncRollouts(
            state.cfg, model, state.step, info, restored=old, carry=state.async_carry
        )
    writer = _metrics_writer(state)
    checkpointer = Checkpointer(state)
    stop, guard = StopRequest(), StepGuard(state)
    try:
        stop.install()
        _train(state, hooks, writer, checkpointer, stop, guard)
    except KeyboardInterrupt:
        return _save_interrupted(state, guard, checkpointer, hooks.curve_keys)
    except RolloutWorkerError:  # the last whole step is saved, then the one-line error
        _save_interrupted(state, guard, checkpointer, hooks.curve_keys)
        raise
    finally:
        stop.uninstall()
        guard.close()
        if state.rollouts is not None:
            state.rollouts.close()
        if writer is not None:
            writer.close()
        if state.pool is not None:
            state.pool.close()
        if state.prefetch is not None:
            state.prefetch.close()
        if state.tools is not None:
            state.tools.close()
    return _finish(state, checkpointer, writer, hooks)


def _train(
    state: TrainState,
    hooks: LoopHooks,
    writer: MetricsWriter | None,
    checkpointer: Checkpointer,
    stop: StopRequest,
    guard: StepGuard,
) -> None:
    """Steps until `trainer.steps`; validation, metrics and checkpoints after each."""
    cfg = state.cfg
    validator = Validator(state, hooks.validate)
    batches = _endless(state.sampler) if state.rollouts is None else _drawn_ahead(state)
    totals = dict[str, float]()
    with StepProgress(
        console,
        cfg.trainer.steps,
        state.step,
        log_every=cfg.trainer.log_every,
        enabled=state.info.is_main,
        reward_key=hooks.reward_key,
        loss_key=hooks.loss_key,
    ) as progress:
        if cfg.trainer.val_before_train and state.step == 0:
            _validate_before_training(state, validator, writer)
        while state.step < cfg.trainer.steps:
            if stop.agreed():  # Ctrl-C: stop between steps, on every rank at once
                raise KeyboardInterrupt
            guard.begin()
            started, cpu_started = time.perf_counter(), time.process_time()
            indices = next(batches)
            if state.prefetch is not None:  # data.prefetch_workers: the next step's media
                ahead = shard_indices(state.sampler.peek_batch(), state.info)
                state.prefetch.ahead(state.records[i].media for i in ahead)
            metrics = hooks.step(state, indices)
            # the step itself (not validation or saving): wall time, and this process's CPU
            # time, which other processes on the machine do not inflate
            metrics["time/step"] = time.perf_counter() - started
            metrics["time/step_cpu"] = time.process_time() - cpu_started
            if state.rollouts is not None:
                metrics.update(state.rollouts.step_metrics(metrics["time/step"]))
            metrics = reduce_metrics(metrics, state.info)
            metrics = with_running_totals(metrics, totals)
            state.step += 1
            if validator.should_validate(state.step):
                metrics.update(validator(state))
            if writer is not None:
                writer.write(state.step, metrics)
            if checkpointer.should_save(state.step):
                checkpointer.save(state)
            progress.update(state.step, metrics)
            guard.end()


def _validate_before_training(
    state: TrainState, validator: Validator, writer: MetricsWriter | None
) -> None:
    """`trainer.val_before_train`: validate the starting model, logged as step 0."""
    if not state.val_records:
        return
    metrics = validator(state)
    if writer is not None:
        writer.write(0, metrics)


def _endless(sampler: Any) -> Iterator[list[int]]:
    """Batch after batch, epoch after epoch (`next_batch`: dynamic sampling's refills draw
    from the same position)."""
    while True:
        yield sampler.next_batch()


def _drawn_ahead(state: TrainState) -> Iterator[list[int]]:
    """Async: each step's prompts, the next `rollout.max_staleness` steps' queued too."""
    assert state.rollouts is not None, "rollout.mode=async"
    while True:
        yield state.rollouts.next_indices(state.step, state.sampler, state.records, state.info)


def _metrics_writer(state: TrainState) -> MetricsWriter | None:
    """Rank 0's metric sinks; it also writes the resolved config that `videorl eval` reads."""
    cfg = state.cfg  # trainer.steps resolved from trainer.epochs
    if not state.info.is_main:
        return None
    out = Path(cfg.trainer.output_dir)
    save_run_config(cfg, out)
    return MetricsWriter(
        out,
        tensorboard=cfg.trainer.tensorboard,
        wandb_project=cfg.trainer.wandb_project,
        config=to_dict(cfg),
    )


def _finish(
    state: TrainState, checkpointer: Checkpointer, writer: MetricsWriter | None, hooks: LoopHooks
) -> Path:
    """The last checkpoint (unless just saved), final/ and the reward curves."""
    checkpointer.save_unsaved(state)
    final = Path(state.cfg.trainer.output_dir) / "final"
    if state.info.is_main and writer is not None:  # rank 0 has the writer
        ckpt.write_atomically(
            final, lambda tmp: ckpt.save_model_folder(state.logprob_model, tmp), replace=True
        )
        curves = plot_reward_curves(
            writer.path, final.parent / "reward_curves.png", hooks.curve_keys
        )
        console.print(f"final model: {final}\nmetrics: {writer.path}\ncurves: {curves}")
        if (best := state.best) is not None:
            console.print(f"best checkpoint by {best.metric}: step {best.step} ({best.value:.4f})")
    barrier()
    return final


def _save_interrupted(
    state: TrainState, guard: StepGuard, checkpointer: Checkpointer, curve_keys: tuple[str, ...]
) -> Path:
    """Ctrl-C: save the state after the last whole step (the step in flight is discarded;
    see `trainer/interrupt.py`); a step already saved is not written again. The reward
    curves of the steps done are drawn as a finished run's are."""
    out = Path(state.cfg.trainer.output_dir)
    metrics = out / "metrics.jsonl"
    if state.info.is_main and metrics.is_file() and metrics.stat().st_size:
        console.print(
            f"curves: {plot_reward_curves(metrics, out / 'reward_curves.png', curve_keys)}"
        )
    if guard.in_flight and (state.info.enabled or not guard.rollback()):
        latest = ckpt.list_checkpoints(out)
        console.print(
            "[yellow]interrupted[/] during an update: that step is discarded and nothing was "
            f"saved; resume with --resume auto (from {latest[-1] if latest else 'the start'})"
        )
        return latest[-1] if latest else out
    path = checkpointer.save_unsaved(state)
    console.print(f"[yellow]interrupted:[/] saved {path}; resume with --resume auto")
    return path
