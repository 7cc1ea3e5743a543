"""`videorl train`: the loop. One screen holds the whole step (`train_step`)."""

from __future__ import annotations

import copy
import logging
import math
import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from rich.console import Console

from videorl.algorithms.taro import constructed_probability
from videorl.config import Config, save_run_config
from videorl.config_loader import to_dict
from videorl.data.loaders import check_media, load_records, media_report
from videorl.data.records import TaskRecord
from videorl.data.sampler import TaskGroupedSampler
from videorl.distributed import (
    DistInfo,
    apply_fsdp,
    barrier,
    init_distributed,
    reduce_metrics,
    shard_indices,
)
from videorl.errors import ConfigError, MediaError
from videorl.models.generate import SamplingParams
from videorl.models.loading import LoadedModel, check_same_tokenizer, load_model
from videorl.models.lora import apply_lora, reference_view
from videorl.models.shared_prompt import enable_shared_prompts
from videorl.models.visual_cache import clear_visual_caches, share_visual_cache
from videorl.rewards.batch import ANNOTATION_PREFIX, CONSTRUCTED_PREFIX, POLICY_PREFIX
from videorl.rewards.pool import ScoringPool
from videorl.rollout.batch import RolloutBatch, empty_batch
from videorl.rollout.engine import HFEngine
from videorl.rollout.groups import add_annotation_rows, generate_groups
from videorl.rollout.prompting import decode_prompts, encode_record
from videorl.rollout.vllm_engine import build_vllm_engine
from videorl.rollout.vllm_support import rollout_engine
from videorl.trainer import checkpoint as ckpt
from videorl.trainer.interrupt import StepGuard, StopRequest
from videorl.trainer.metrics import MetricsWriter, plot_reward_curves
from videorl.trainer.progress import StepProgress
from videorl.trainer.run_dir import claim_run_dir, run_inputs
from videorl.trainer.stages import (
    add_sensitivity_bonus,
    add_teacher_logprobs,
    compute_advantages,
    row_kinds,
    score,
    select,
)
from videorl.trainer.state import TrainState
from videorl.trainer.tgrpo import add_temporal_contrast_bonus, shuffled_rollouts
from videorl.trainer.threads import set_cpu_threads
from videorl.trainer.update import UpdateContext, update_policy
from videorl.trainer.validation import validate
from videorl.video.cache import VideoCache

log = logging.getLogger(__name__)
console = Console()


class StageTimer:
    """Wall time per named stage of a step (`time/<stage>` metrics)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        yield
        self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start

    def metrics(self) -> dict[str, float]:
        return {f"time/{k}": v for k, v in self.seconds.items()}


def lr_lambda(cfg: Config):
    """Linear warm-up, then constant or cosine decay to `min_lr_ratio`."""
    optim, total = cfg.optim, cfg.trainer.steps

    def factor(step: int) -> float:
        if step < optim.warmup_steps:
            return (step + 1) / (optim.warmup_steps + 1)
        if optim.schedule == "constant":
            return 1.0
        progress = (step - optim.warmup_steps) / max(1, total - optim.warmup_steps)
        return optim.min_lr_ratio + (1 - optim.min_lr_ratio) * 0.5 * (
            1 + math.cos(math.pi * min(1.0, progress))
        )

    return factor


def _records(cfg: Config, path: str, split: str) -> list[TaskRecord]:
    result = load_records(
        path,
        format=cfg.data.format,
        family=cfg.data.family,
        video_root=cfg.data.video_root,
        skip_invalid=cfg.data.skip_invalid,
        columns=cfg.data.columns,
        split=split,
        streaming=cfg.data.streaming,
        max_rows=cfg.data.max_rows,
    )
    wanted = {f for f in cfg.data.families}
    records = [
        r
        for r in result.records
        if not wanted or r.family.value in wanted or r.family.short in wanted
    ]
    if not records:
        raise ConfigError(
            f"data file {path!r} has no records of data.families={list(cfg.data.families)}"
        )
    missing = check_media(records)
    if missing:
        total = len({r.media.path for r in records if r.media is not None and r.media.path})
        if len(missing) == total:
            raise MediaError(media_report(missing, total))
        console.print(
            f"[yellow]warning:[/] {media_report(missing, total)}; those samples are skipped and counted"
        )
    return records


def steps_from_epochs(cfg: Config, batches_per_epoch: int) -> Config:
    """`trainer.steps = trainer.epochs * batches_per_epoch` when `trainer.epochs` is set."""
    if cfg.trainer.epochs is None:
        return cfg
    steps = cfg.trainer.epochs * batches_per_epoch
    return replace(cfg, trainer=replace(cfg.trainer, steps=steps))


def build_state(cfg: Config, resume: str | None, info: DistInfo | None = None) -> TrainState:
    """Load data, models and optimizer (FSDP2-sharded under torchrun); restore a checkpoint."""
    info = info or DistInfo(
        device=cfg.trainer.device
        if cfg.trainer.device != "auto"
        else ("cuda" if torch.cuda.is_available() else "cpu")
    )
    set_cpu_threads(cfg.trainer.cpu_threads, info.device)
    torch.manual_seed(cfg.trainer.seed)
    random.seed(cfg.trainer.seed)
    np.random.seed(cfg.trainer.seed)  # checkpoints restore it, so a fresh run seeds it too
    checkpoint = ckpt.resolve_resume(resume, cfg.trainer.output_dir)
    # data before models: a bad data file fails in seconds, not after the model loads
    records = _records(cfg, cfg.data.train, cfg.data.split)
    val_records = (
        _records(cfg, cfg.data.val, cfg.data.val_split)[: cfg.trainer.val_max_prompts]
        if cfg.data.val
        else []
    )
    model_kwargs = {
        "dtype": getattr(torch, cfg.model.dtype),
        "device": info.device,
        "attn_implementation": cfg.model.attn_implementation,
        "packing": cfg.model.packing,
    }
    policy = load_model(cfg.model.path, revision=cfg.model.revision, **model_kwargs)
    if cfg.model.freeze_vision:
        for name, param in policy.model.named_parameters():
            if "visual" in name:
                param.requires_grad_(False)
    if cfg.model.gradient_checkpointing:  # transformers' current name, else the pre-5.2x one
        model = policy.model
        getattr(model, "activation_checkpointing_enable", model.gradient_checkpointing_enable)()
    if cfg.model.lora.enabled:
        policy = _with_lora(cfg, policy, info)
    rollout_model = policy
    if info.enabled:  # generation and no-grad passes use an unsharded copy, synced each step
        rollout_model = replace(policy, model=copy.deepcopy(policy.model).requires_grad_(False))
        apply_fsdp(policy.model, bf16=cfg.trainer.bf16 and "cuda" in info.device)
    teacher = reference = None
    if cfg.algorithm.is_distillation:
        teacher = load_model(cfg.model.teacher_path, **model_kwargs)
        check_same_tokenizer(policy, teacher)
        teacher.model.eval()
    if cfg.model.lora.enabled and cfg.model.reference_path in (None, cfg.model.path):
        reference = reference_view(policy)  # the base: the same weights, adapters off
    elif cfg.model.reference_path:
        reference = load_model(cfg.model.reference_path, **model_kwargs)
        reference.model.eval()
    if cfg.model.reuse_visual_embeddings:
        share_visual_cache(policy, rollout_model, teacher, reference)
    enable_shared_prompts(cfg.model.share_prompt_forward, rollout_model, teacher, reference)
    if info.enabled:  # FSDP ranks must run matching forwards: one per update micro-batch
        policy.share_prompts = False
    optimizer = torch.optim.AdamW(
        [p for p in policy.model.parameters() if p.requires_grad],
        lr=cfg.optim.lr,
        betas=cfg.optim.betas,
        weight_decay=cfg.optim.weight_decay,
    )
    sampler = TaskGroupedSampler(
        records,
        cfg.data.prompts_per_step,
        seed=cfg.data.seed,
        shuffle=cfg.data.shuffle,
        group_by_family=cfg.data.group_by_family,
    )
    cfg = steps_from_epochs(cfg, len(sampler))
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda(cfg))
    state = TrainState(
        cfg=cfg,
        policy=policy,
        engine=HFEngine(rollout_model, share_prefill=cfg.rollout.share_prefill)
        if rollout_engine(cfg.rollout.engine, cfg.model.path) == "hf"
        else build_vllm_engine(cfg, rollout_model, info),
        optimizer=optimizer,
        scheduler=scheduler,
        videos=VideoCache(cfg.video),
        sampler=sampler,
        records=records,
        val_records=val_records,
        reference=reference,
        teacher=teacher,
        info=info,
        pool=ScoringPool(cfg.reward) if cfg.reward.workers > 1 else None,
    )
    if checkpoint is not None:
        saved = ckpt.load_checkpoint(checkpoint, policy=policy, optimizer=optimizer, info=info)
        scheduler.load_state_dict(saved["scheduler"])
        sampler.load_state_dict(saved["sampler"])
        state.step, state.best = int(saved["step"]), dict(saved.get("best", {}))
        state.engine.sync_weights(policy.model)
        if info.is_main:
            console.print(
                f"resumed from {checkpoint} (saved by {saved.get('world_size', 1)} ranks) at step {state.step}"
            )
    return state


def _with_lora(cfg: Config, policy: LoadedModel, info: DistInfo) -> LoadedModel:
    """The policy with fresh LoRA adapters (model.lora); only the adapters train."""
    if info.enabled:
        raise ConfigError(
            f"model.lora.rank={cfg.model.lora.rank} with {info.world_size} ranks: sharding "
            "PEFT adapters with FSDP is not supported yet; train LoRA on one process "
            "(trainer.nproc=1) or set model.lora.rank=0"
        )
    if cfg.model.gradient_checkpointing:  # frozen embeddings: checkpointed blocks need grads
        policy.model.enable_input_require_grads()
    model = apply_lora(
        policy.model,
        cfg.model.lora,
        base=cfg.model.path,
        revision=cfg.model.revision,
        adapt_vision=not cfg.model.freeze_vision,
    )
    return replace(policy, model=model)


def _endless(sampler: TaskGroupedSampler) -> Iterator[list[int]]:
    while True:
        yield from sampler


def train_step(state: TrainState, indices: list[int]) -> dict[str, Any]:
    """decode -> rollout (+ constructed, + annotation rows) -> rewards -> advantages -> selection -> update."""
    cfg, timer = state.cfg, StageTimer()
    scorer = state.engine.loaded  # the policy itself, or its synced unsharded copy under FSDP
    clear_visual_caches(state.policy, state.reference, state.teacher)  # e.g. validation's videos
    with timer("decode"):
        mine = [state.records[i] for i in shard_indices(indices, state.info)]
        records, prompts, videos, skipped, too_long = decode_prompts(
            mine, state.videos, state.policy, cfg.data
        )
        state.skipped_long_prompts += too_long
    if not records:  # every sample of this rank was bad: still join the update's collectives
        # and the rollout's: vLLM's data-parallel engines step in lockstep
        state.engine.generate([], SamplingParams())
        if cfg.algorithm.constructed.enabled:
            state.engine.continue_prefixes([], [], SamplingParams())
        update_policy(_update_context(state), empty_batch())
        state.scheduler.step()
        state.engine.sync_weights(state.policy.model)
        return {"data/skipped_media": float(skipped), "step/skipped": 1.0}
    params = SamplingParams(
        n=cfg.rollout.n,
        max_new_tokens=cfg.rollout.max_new_tokens,
        temperature=cfg.rollout.temperature,
        top_p=cfg.rollout.top_p,
        top_k=cfg.rollout.top_k,
    )
    with timer("rollout"):
        constructed = None
        if cfg.algorithm.constructed.enabled:
            p = constructed_probability(
                state.step, state.sampler.epoch, cfg.algorithm.constructed.curriculum
            )
            constructed = torch.rand(len(prompts), cfg.rollout.n) < p
        batch = generate_groups(
            state.engine,
            records,
            prompts,
            videos,
            params,
            state.policy.tokenizer,
            constructed=constructed,
            rng=random.Random(state.step),
        )
        if cfg.algorithm.annotation_rows:
            batch = add_annotation_rows(
                batch,
                state.policy.tokenizer,
                state.policy.eos_token_ids[0],
                cfg.rollout.max_new_tokens,
                think=cfg.data.think,
            )
        tgrpo = cfg.algorithm.temporal_contrast  # T-GRPO: shuffled rows stay out of `batch`
        shuffled = shuffled_rollouts(state, batch, params) if tgrpo.enabled else None
    state.engine.sleep()  # free the rollout engine's KV cache (and weights) until the weight sync
    with timer("reward"):
        batch = score(batch, cfg.reward, state.pool)
        if shuffled is not None:
            batch = add_temporal_contrast_bonus(batch, shuffled, cfg.reward, tgrpo, state.pool)
        if cfg.reward.sensitivity.enabled:
            batch = add_sensitivity_bonus(
                batch,
                scorer,
                lambda r, v: encode_record(
                    scorer,
                    r,
                    v,
                    cfg.data.think,
                    cfg.data.chat_template_kwargs,
                    style=cfg.data.prompt_style,
                ),
                cfg.reward,
                step=state.step,
                temperature=cfg.rollout.temperature,
                token_budget=cfg.optim.micro_batch_tokens,
            )
    reward_metrics = rollout_metrics(batch, cfg.rollout.max_new_tokens)
    with timer("teacher"):
        if cfg.algorithm.is_distillation:
            batch = add_teacher_logprobs(
                batch,
                scorer,
                state.teacher,
                temperature=cfg.rollout.temperature,
                token_budget=cfg.optim.micro_batch_tokens,
            )
    with timer("advantage"):
        batch = compute_advantages(batch, cfg.algorithm)
        rows_before = batch.num_rows
        batch = select(batch, cfg.algorithm.pruning, cfg.rollout.n)
    with timer("update"):
        update_metrics = update_policy(_update_context(state), batch)
    lr = state.scheduler.get_last_lr()[0]  # the rate this step's update used
    clear_visual_caches(state.policy, state.reference, state.teacher)  # this step's videos only
    state.scheduler.step()
    state.engine.sync_weights(state.policy.model)
    tokens = float(batch.response_lengths.sum())
    total = sum(timer.seconds.values())
    return {
        **batch.metrics,
        **reward_metrics,
        **update_metrics,
        **timer.metrics(),
        "rows/total": float(rows_before),
        "rows/kept": float(batch.num_rows),
        "rows/dropped": float(rows_before - batch.num_rows),
        "data/skipped_media": float(skipped),
        "data/skipped_long_prompts_total": float(state.skipped_long_prompts),
        "lr": lr,
        "perf/tokens_per_s": tokens / max(total, 1e-9),
        "perf/step_s": total,
        "perf/peak_mem_gb": _peak_memory_gb(),
        "batch_ids": [r.id for r in records],
        "samples": [
            {"id": batch.records[int(g)].id, "text": t, "reward": float(r)}
            for g, t, r in zip(batch.group_ids[:4], batch.texts[:4], batch.rewards[:4])
        ],
    }


def rollout_metrics(batch: RolloutBatch, max_new_tokens: int) -> dict[str, Any]:
    """Reward and length statistics of the policy rows, before selection; annotation and
    constructed rows' rewards (sensitivity bonus included) under their own prefixes."""
    kinds = row_kinds(batch)
    policy_rows, annotation = kinds[POLICY_PREFIX], batch.is_annotation
    metrics = {
        "reward/mean": float(batch.rewards[policy_rows].mean()),
        "response/length_mean": float(batch.response_lengths[policy_rows].float().mean()),
        "response/truncated_frac": float(batch.truncated[policy_rows].float().mean()),
        "rollout/constructed_rows": float(batch.off_policy.sum()),
        "rollout/annotation_truncated": float(batch.truncated[annotation].sum()),
    }
    for prefix in (ANNOTATION_PREFIX, CONSTRUCTED_PREFIX):
        if kinds[prefix].any():
            metrics[f"{prefix}mean"] = float(batch.rewards[kinds[prefix]].mean())
    if metrics["rollout/annotation_truncated"]:
        log.warning(
            "%d annotation rows were cut by rollout.max_new_tokens=%d and score below 1; raise it",
            int(metrics["rollout/annotation_truncated"]),
            max_new_tokens,
        )
    return metrics


def _update_context(state: TrainState) -> UpdateContext:
    cfg = state.cfg
    return UpdateContext(
        policy=state.policy,
        optimizer=state.optimizer,
        optim=cfg.optim,
        loss=cfg.algorithm.loss,
        temperature=cfg.rollout.temperature,
        reference=state.reference,
        logprob_model=state.engine.loaded,
        world_size=state.info.world_size,
        autocast_dtype=torch.bfloat16 if cfg.trainer.bf16 and torch.cuda.is_available() else None,
    )


def _peak_memory_gb() -> float:
    if torch.cuda.is_available():
        return torch.cuda.max_memory_allocated() / 2**30
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def _save(state: TrainState) -> Path:
    extras = {
        "scheduler": state.scheduler.state_dict(),
        "sampler": state.sampler.state_dict(),
        "best": state.best,
    }
    return ckpt.save_checkpoint(
        state.cfg.trainer.output_dir,
        state.step,
        policy=state.policy,
        optimizer=state.optimizer,
        extras=extras,
        info=state.info,
        keep_last=state.cfg.trainer.keep_last,
    )


@dataclass(frozen=True)
class LoopHooks:
    """What differs between jobs that share `run_training` (RL; `videorl sft`): the step, the
    validation and what the progress shows (None: RL's `train_step` and `validate`, looked
    up when the loop starts). Data, models, checkpoints, resume, metric sinks, best/ and
    final/ are the loop's."""

    step: Callable[[TrainState, list[int]], dict[str, Any]] | None = None
    validate: Callable[[TrainState], dict[str, Any]] | None = None
    reward_key: str = "reward/mean"  # the progress bar's and log line's reward and loss
    loss_key: str = "actor/loss"
    curve_keys: tuple[str, ...] = ()  # what reward_curves.png plots (default: the rewards)


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
    step_fn = hooks.step or train_step
    validate_fn = hooks.validate or validate
    info = init_distributed(cfg.trainer.device)
    if cfg.data.prompts_per_step % info.world_size:
        raise ConfigError(
            f"data.prompts_per_step={cfg.data.prompts_per_step} must be divisible by the "
            f"{info.world_size} ranks (whole groups stay on one rank)"
        )
    checkpoint = ckpt.resolve_resume(resume, cfg.trainer.output_dir)
    claim_run_dir(
        cfg.trainer.output_dir,
        checkpoint,
        resume=resume is not None,
        overwrite=overwrite,
        info=info,
        steps=cfg.trainer.steps,
        inputs=run_inputs(cfg),
    )
    state = build_state(cfg, resume, info)
    cfg = state.cfg  # trainer.steps resolved from trainer.epochs
    out = Path(cfg.trainer.output_dir)
    writer = (
        MetricsWriter(
            out,
            tensorboard=cfg.trainer.tensorboard,
            wandb_project=cfg.trainer.wandb_project,
            config=to_dict(cfg),
        )
        if info.is_main
        else None
    )
    if info.is_main:
        save_run_config(cfg, out)  # what `videorl eval` of this run's checkpoints reads
    batches = _endless(state.sampler)
    stop, guard = StopRequest(), StepGuard(state)
    saved = state.step if (out / f"step-{state.step:06d}" / "state.pt").is_file() else None
    try:
        stop.install()
        with StepProgress(
            console,
            cfg.trainer.steps,
            state.step,
            log_every=cfg.trainer.log_every,
            enabled=info.is_main,
            reward_key=hooks.reward_key,
            loss_key=hooks.loss_key,
        ) as progress:
            while state.step < cfg.trainer.steps:
                if stop.agreed():  # Ctrl-C: stop between steps, on every rank at once
                    raise KeyboardInterrupt
                guard.begin()
                metrics = reduce_metrics(step_fn(state, next(batches)), info)
                state.step += 1
                if (
                    cfg.trainer.val_every
                    and state.step % cfg.trainer.val_every == 0
                    and state.val_records
                ):
                    if info.is_main:
                        metrics.update(validate_fn(state))
                        if _record_best(state, metrics):
                            ckpt.write_atomically(
                                out / "best",
                                lambda tmp: ckpt.save_model_folder(state.engine.loaded, tmp),
                                replace=True,
                            )
                    barrier()
                if writer is not None:
                    writer.write(state.step, metrics)
                if cfg.trainer.save_every and state.step % cfg.trainer.save_every == 0:
                    _save(state)
                    saved = state.step
                progress.update(state.step, metrics)
                guard.end()
    except KeyboardInterrupt:
        return _save_interrupted(state, guard, saved)
    finally:
        stop.uninstall()
        guard.close()
        if writer is not None:
            writer.close()
        if state.pool is not None:
            state.pool.close()
    if not cfg.trainer.save_every or state.step % cfg.trainer.save_every:
        _save(state)
    final = out / "final"
    if info.is_main:
        ckpt.write_atomically(
            final, lambda tmp: ckpt.save_model_folder(state.engine.loaded, tmp), replace=True
        )
        curves = plot_reward_curves(writer.path, out / "reward_curves.png", hooks.curve_keys)
        console.print(f"final model: {final}\nmetrics: {writer.path}\ncurves: {curves}")
        if state.best:
            console.print(
                f"best checkpoint by {cfg.trainer.best_metric}: step {state.best['step']} ({state.best['value']:.4f})"
            )
    barrier()
    return final


def _save_interrupted(state: TrainState, guard: StepGuard, saved: int | None) -> Path:
    """Ctrl-C: save the state after the last whole step (the step in flight is discarded;
    see `trainer/interrupt.py`); a step already saved is not written again."""
    out = Path(state.cfg.trainer.output_dir)
    if guard.in_flight and (state.info.enabled or not guard.rollback()):
        latest = ckpt.list_checkpoints(out)
        console.print(
            "[yellow]interrupted[/] during an update: that step is discarded and nothing was "
            f"saved; resume with --resume auto (from {latest[-1] if latest else 'the start'})"
        )
        return latest[-1] if latest else out
    path = out / f"step-{state.step:06d}" if saved == state.step else _save(state)
    console.print(f"[yellow]interrupted:[/] saved {path}; resume with --resume auto")
    return path


def _record_best(state: TrainState, metrics: dict[str, Any]) -> bool:
    """Remember the best validation step by `trainer.best_metric`; True when it improved."""
    value = metrics.get(state.cfg.trainer.best_metric)
    if value is None or (state.best and value <= state.best["value"]):
        return False
    state.best = {
        "step": state.step,
        "value": float(value),
        "metric": state.cfg.trainer.best_metric,
    }
    metrics["val/best_step"] = state.step
    return True
