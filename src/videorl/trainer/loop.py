"""`videorl train`: the loop. One screen holds the whole step (`train_step`), in the order of
docs/design.md#one-training-step; each stage is a function from `RolloutBatch` to `RolloutBatch`."""

from __future__ import annotations

import contextlib
import functools
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from videorl.algorithms.taro import constructed_probability, draw_constructed
from videorl.config import Config, check_world_size
from videorl.config_loader import to_dict
from videorl.distributed import (
    barrier,
    init_distributed,
    reduce_metrics,
    shard_indices,
    with_sequence_groups,
)
from videorl.models.chat_template import template_kwargs
from videorl.models.loading import LoadedModel
from videorl.models.visual_cache import clear_visual_caches
from videorl.reduction import Summed
from videorl.rewards.config import RewardConfig
from videorl.rewards.pool import ScoringPool
from videorl.rollout.batch import RolloutBatch
from videorl.rollout.engine import RolloutEngine
from videorl.rollout.groups import add_annotation_rows, generate_groups, generate_tool_groups
from videorl.rollout.multiturn import MultiTurnLimits
from videorl.rollout.prompting import DecodedPrompts, decode_prompts, record_encoder
from videorl.rollout.tools import ToolDecodes, ToolRunner
from videorl.run_config import save_run_config
from videorl.trainer import checkpoint as ckpt
from videorl.trainer.build import build_state
from videorl.trainer.checkpoint import Checkpointer
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
from videorl.trainer.stages import (
    add_length_rewards,
    add_sensitivity_bonus,
    add_teacher_logprobs,
    compute_advantages,
    score,
    select,
)
from videorl.trainer.state import TrainState
from videorl.trainer.tgrpo import add_shuffled_rollouts, add_temporal_contrast_bonus
from videorl.trainer.update import UpdateContext, update_policy
from videorl.trainer.validation import Validator, validate

console = Console()


@dataclass(frozen=True)
class Stages:
    """Stages `train_step` calls through this table, so that a caller can substitute one (a
    fixed reward, a spy around the update) and still run the whole step, alone or in the
    loop: `LoopHooks(step=functools.partial(train_step, stages=replace(STAGES, score=...)))`."""

    score: Callable[[RolloutBatch, RewardConfig, ScoringPool | None], RolloutBatch] = score
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
                **_no_grad(cfg),
            )
    with timer("advantage"):
        batch = compute_advantages(batch, cfg.algorithm)
        rows_before = batch.num_rows
        batch = select(batch, cfg.algorithm.pruning, cfg.rollout.n)
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
    """This rank's share of `indices`, decoded, rolled out and rewarded (draw 0 is the
    step's batch; later draws are dynamic sampling's refills); its metrics count the
    prompts skipped (bad media, over `data.max_prompt_tokens`). No usable prompt: still
    rolls out (lockstep) and returns the empty batch."""
    cfg = state.cfg
    tools = state.tools.schemas() if state.tools is not None else []
    with timer("decode"):
        mine = [state.records[i] for i in shard_indices(indices, state.info)]
        decoded = decode_prompts(mine, state.videos, state.policy, cfg.data, tools)
    with timer("rollout"):
        batch = _rollout(
            decoded,
            state.engine,
            state.policy,
            state.logprob_model,
            cfg,
            step=state.step,
            epoch=state.sampler.epoch,
            draw=draw,
            tools=state.tools,
        )
    state.engine.sleep()  # free the rollout engine's KV cache (and weights) until the weight sync
    batch = batch.with_metrics(
        **{
            "data/skipped_media": Summed(decoded.skipped_media),
            "data/skipped_long_prompts": Summed(decoded.skipped_long),
        }
    )
    if not decoded.records:
        return batch
    with timer("reward"), _split_forwards(state):
        batch = _rewards(batch, cfg, stages.score, state.pool, state.logprob_model, step=state.step)
    return batch


def _split_forwards(state: TrainState) -> contextlib.AbstractContextManager[None]:
    """The scoring forwards split over the rank's sequence-parallel group, if it has one."""
    models = (state.policy, state.logprob_model, state.reference, state.teacher)
    return split_forwards(state.info.sequence_group, *models)


def _rollout(
    decoded: DecodedPrompts,
    engine: RolloutEngine,
    policy: LoadedModel,
    logprob_model: LoadedModel,
    cfg: Config,
    *,
    step: int,
    epoch: int,
    draw: int,
    tools: ToolRunner | None = None,
) -> RolloutBatch:
    """n rows per prompt (multi-turn rows calling `tools` when the run has them), TaRO's
    constructed rows drawn by the curriculum, OraRL's annotation rows appended, T-GRPO's
    shuffled-frame responses beside the rows. Called with no prompts too: vLLM's
    data-parallel engines step in lockstep. `draw` > 0 (dynamic sampling's refills) seeds
    the constructed prefixes apart."""
    tokenizer, algorithm = policy.tokenizer, cfg.algorithm
    constructed = None
    if algorithm.constructed.enabled:
        p = constructed_probability(step, epoch, algorithm.constructed.curriculum)
        constructed = draw_constructed((len(decoded.prompts), cfg.rollout.n), p)
    if tools is not None:
        batch = generate_tool_groups(
            engine,
            decoded.records,
            decoded.prompts,
            decoded.media,
            cfg.rollout.sampling(),
            runner=tools,
            limits=MultiTurnLimits(cfg.rollout.max_turns, cfg.rollout.max_total_tokens),
            decodes=ToolDecodes(),
            video_config=cfg.video,
            template_kwargs=template_kwargs(cfg.data.think, cfg.data.chat_template_kwargs),
        )
    else:
        batch = generate_groups(
            engine,
            decoded.records,
            decoded.prompts,
            decoded.media,
            cfg.rollout.sampling(),
            tokenizer,
            constructed=constructed,
            rng=random.Random(step if draw == 0 else f"{step}:{draw}"),
        )
    if algorithm.annotation_rows:
        eos, budget = policy.eos_token_ids[0], cfg.rollout.max_new_tokens
        batch = add_annotation_rows(batch, tokenizer, eos, budget, think=cfg.data.think)
    if algorithm.temporal_contrast.enabled:
        encode = record_encoder(logprob_model, cfg.data)
        params, tgrpo = cfg.rollout.sampling(), algorithm.temporal_contrast
        batch = add_shuffled_rollouts(
            batch, engine, encode, params, tgrpo, step=step, tokenizer=tokenizer
        )
    return batch


def _rewards(
    batch: RolloutBatch,
    cfg: Config,
    score_stage: Callable[[RolloutBatch, RewardConfig, ScoringPool | None], RolloutBatch],
    pool: ScoringPool | None,
    logprob_model: LoadedModel,
    *,
    step: int,
) -> RolloutBatch:
    """score -> T-GRPO temporal contrast bonus -> length terms -> TaRO sensitivity bonus."""
    batch = score_stage(batch, cfg.reward, pool)
    tgrpo = cfg.algorithm.temporal_contrast
    batch = add_temporal_contrast_bonus(batch, cfg.reward, tgrpo, pool)  # needs `shuffled`
    batch = add_length_rewards(batch, cfg.reward, max_new_tokens=cfg.rollout.response_budget)
    if cfg.reward.sensitivity.enabled:
        encode = record_encoder(logprob_model, cfg.data)
        batch = add_sensitivity_bonus(
            batch, logprob_model, encode, cfg.reward, step=step, **_no_grad(cfg)
        )
    return batch


def _no_grad(cfg: Config) -> dict[str, Any]:
    """The no-grad log-prob passes' settings: the rollout temperature, the token budget."""
    return {"temperature": cfg.rollout.temperature, "token_budget": cfg.optim.micro_batch_tokens}


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
    """Drop this step's cached vision outputs, advance the LR, push the new weights."""
    clear_visual_caches(state.policy, state.reference, state.teacher)
    state.scheduler.step()
    state.engine.sync_weights(state.policy.model)


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
    writer = _metrics_writer(state)
    checkpointer = Checkpointer(state)
    stop, guard = StopRequest(), StepGuard(state)
    try:
        stop.install()
        _train(state, hooks, writer, checkpointer, stop, guard)
    except KeyboardInterrupt:
        return _save_interrupted(state, guard, checkpointer, hooks.curve_keys)
    finally:
        stop.uninstall()
        guard.close()
        if writer is not None:
            writer.close()
        if state.pool is not None:
            state.pool.close()
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
    batches, totals = _endless(state.sampler), dict[str, float]()
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
            metrics = hooks.step(state, next(batches))
            # the step itself (not validation or saving): wall time, and this process's CPU
            # time, which other processes on the machine do not inflate
            metrics["time/step"] = time.perf_counter() - started
            metrics["time/step_cpu"] = time.process_time() - cpu_started
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
