"""`videorl train`: the run loop around the step (`trainer/step.py: train_step`): data,
models, metric sinks, validation, checkpoints, resume, best/ and final/."""

from __future__ import annotations

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
from videorl.trainer import checkpoint as ckpt
from videorl.trainer.async_rollout import AsyncRollouts
from videorl.trainer.build import build_state
from videorl.trainer.checkpoint import Checkpointer
from videorl.trainer.interrupt import StepGuard, StopRequest
from videorl.trainer.metrics import MetricsWriter, plot_reward_curves
from videorl.trainer.progress import StepProgress
from videorl.trainer.run_dir import claim_run_dir, run_inputs
from videorl.trainer.state import TrainState
from videorl.trainer.step import StepResult, train_step
from videorl.trainer.validation import Validator, validate

console = Console()


@dataclass(frozen=True)
class LoopHooks:
    """What differs between jobs that share `run_training` (RL; `videorl sft`): the step, the
    validation and what the progress shows. Data, models, checkpoints, resume, metric
    sinks, best/ and final/ are the loop's."""

    step: Callable[[TrainState, list[int]], StepResult] = train_step
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
            result = hooks.step(state, indices)
            # the step itself (not validation or saving): wall time, and this process's CPU
            # time, which other processes on the machine do not inflate
            seconds = time.perf_counter() - started
            metrics = {**result.metrics, "time/step": seconds}
            metrics["time/step_cpu"] = time.process_time() - cpu_started
            if state.rollouts is not None:
                metrics.update(state.rollouts.step_metrics(seconds))
            # the logged row: the metrics, and every rank's batch ids (lists concatenate)
            ids = {} if result.batch_ids is None else {"batch_ids": result.batch_ids}
            metrics = reduce_metrics({**metrics, **ids}, state.info)
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
