"""Everything a run needs before its first step: data, models, engine, optimizer, restore."""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import torch
from rich.console import Console
from rich.markup import escape

from videorl.config import Config
from videorl.data.loaders import load_training_records
from videorl.data.records import TaskRecord
from videorl.data.sampler import TaskGroupedSampler
from videorl.distributed import DistInfo, apply_fsdp
from videorl.models.loading import LoadedModel, check_same_tokenizer, load_model
from videorl.models.lora import reference_view
from videorl.models.shared_prompt import enable_shared_prompts
from videorl.models.visual_cache import VisualCaches, share_visual_cache
from videorl.rewards.pool import ScoringPool
from videorl.rollout.engine import HFEngine, RolloutEngine
from videorl.rollout.vllm_engine import VLLMEngine, build_vllm_engine, build_vllm_teacher
from videorl.rollout.vllm_support import rollout_engine
from videorl.trainer import checkpoint as ckpt
from videorl.trainer.optim import build_optimizer
from videorl.trainer.oversample import restore_carry
from videorl.trainer.policy_setup import setup_policy, tool_runner
from videorl.trainer.sequence_parallel import (
    GroupEngine,
    check_sequence_parallel,
    vision_split_note,
)
from videorl.trainer.state import BestStep, TrainState
from videorl.trainer.threads import busy_cores_hint, set_cpu_threads
from videorl.video.cache import VideoCache
from videorl.video.prefetch import Prefetcher

console = Console()


def steps_from_epochs(cfg: Config, batches_per_epoch: int) -> Config:
    """`trainer.steps = trainer.epochs * batches_per_epoch` when `trainer.epochs` is set
    (with dynamic sampling, batches of `batches_per_draw` sampler batches, as DAPO counts
    `len(train_dataloader)` in gen batches; refills consume more)."""
    if cfg.trainer.epochs is None:
        return cfg
    sampling = cfg.algorithm.dynamic_sampling
    if sampling.enabled:
        batches_per_epoch = max(1, batches_per_epoch // sampling.batches_per_draw)
    steps = cfg.trainer.epochs * batches_per_epoch
    return replace(cfg, trainer=replace(cfg.trainer, steps=steps))


def build_state(cfg: Config, resume: str | None, info: DistInfo | None = None) -> TrainState:
    """Load data, models and optimizer (FSDP2-sharded under torchrun); restore a checkpoint."""
    info = info or DistInfo(device=_device(cfg))
    threads = set_cpu_threads(cfg.trainer.cpu_threads, info.device)
    torch.manual_seed(cfg.trainer.seed)
    random.seed(cfg.trainer.seed)
    np.random.seed(cfg.trainer.seed)  # checkpoints restore it, so a fresh run seeds it too
    checkpoint = ckpt.resolve_resume(resume, cfg.trainer.output_dir)
    tools = tool_runner(cfg)  # an unknown tool name fails before anything loads
    # data before models: a bad data file fails in seconds, not after the model loads
    records = _records(cfg, cfg.data.train, cfg.data.split)
    val_records = (
        _records(cfg, cfg.data.val, cfg.data.val_split)[: cfg.trainer.val_max_prompts]
        if cfg.data.val
        else []
    )
    models = _Models.load(cfg, info)
    check_sequence_parallel(info.sequence_parallel, models.policy.model)
    if info.is_main and (note := vision_split_note(info.sequence_parallel, models.policy.model)):
        console.print(f"[yellow]note:[/] {note}")
    if info.is_main and info.device.startswith("cpu") and (hint := busy_cores_hint(threads)):
        console.print(f"[yellow]note:[/] {hint}")  # after the data: a bad file stays one line
    sampler = TaskGroupedSampler(
        records,
        cfg.data.prompts_per_step,
        seed=cfg.data.seed,
        shuffle=cfg.data.shuffle,
        group_by_family=cfg.data.group_by_family,
        sampler=cfg.data.sampler,
    )
    cfg = steps_from_epochs(cfg, len(sampler))
    optimizer, scheduler = build_optimizer(cfg, models.policy.model)
    videos = VideoCache(cfg.video)
    workers = cfg.data.prefetch_workers
    state = TrainState(
        cfg=cfg,
        policy=models.policy,
        engine=_engine(cfg, models.rollout, info),
        logprob_model=models.rollout,
        optimizer=optimizer,
        scheduler=scheduler,
        videos=videos,
        sampler=sampler,
        records=records,
        val_records=val_records,
        reference=models.reference,
        teacher=models.teacher,
        teacher_engine=_teacher_engine(cfg, models.teacher, info),
        visual_caches=models.visual_caches,
        info=info,
        pool=ScoringPool(cfg.reward) if cfg.reward.workers > 1 else None,
        tools=tools,
        prefetch=Prefetcher(videos, workers) if workers else None,
    )
    if checkpoint is not None:
        _restore(state, checkpoint)
    return state


def _device(cfg: Config) -> str:
    if cfg.trainer.device != "auto":
        return cfg.trainer.device
    return "cuda" if torch.cuda.is_available() else "cpu"


def _records(cfg: Config, path: str, split: str) -> list[TaskRecord]:
    data = cfg.data
    return load_training_records(
        path,
        families=data.families,
        warn=lambda message: console.print(
            f"[yellow]warning:[/] {escape(message)}", highlight=False, soft_wrap=True
        ),
        format=data.format,
        family=data.family,
        video_root=data.video_root,
        skip_invalid=data.skip_invalid,
        columns=data.columns,
        split=split,
        streaming=data.streaming,
        max_rows=data.max_rows,
        format_prompt=data.format_prompt,
    )


@dataclass
class _Models:
    """The policy, its rollout copy (itself on one process), the teacher and reference."""

    policy: LoadedModel
    rollout: LoadedModel
    teacher: LoadedModel | None = None
    reference: LoadedModel | None = None
    visual_caches: VisualCaches = field(default_factory=VisualCaches)

    @classmethod
    def load(cls, cfg: Config, info: DistInfo) -> _Models:
        kwargs = {
            "dtype": getattr(torch, cfg.model.dtype),
            "device": info.device,
            "attn_implementation": cfg.model.attn_implementation,
            "packing": cfg.model.packing,
        }
        policy = setup_policy(
            cfg, info, load_model(cfg.model.path, revision=cfg.model.revision, **kwargs)
        )
        models = cls(policy, policy)
        if info.enabled:  # generation and no-grad passes use an unsharded copy, synced each step
            models.rollout = replace(
                policy, model=copy.deepcopy(policy.model).requires_grad_(False)
            )
            apply_fsdp(policy.model, bf16=cfg.trainer.bf16 and "cuda" in info.device)
        if cfg.algorithm.is_distillation:
            assert cfg.model.teacher_path, "Config validation requires it for distillation"
            models.teacher = load_model(cfg.model.teacher_path, **kwargs)
            check_same_tokenizer(policy, models.teacher)
            models.teacher.model.eval()
        if cfg.model.lora.enabled and cfg.model.reference_path in (None, cfg.model.path):
            models.reference = reference_view(policy)  # the base: the same weights, adapters off
        elif cfg.model.reference_path:
            models.reference = load_model(cfg.model.reference_path, **kwargs)
            models.reference.model.eval()
        frozen = (models.rollout, models.teacher, models.reference)
        if cfg.model.reuse_visual_embeddings:
            models.visual_caches = share_visual_cache(policy, *frozen)
        # a split forward keeps no KV cache, so sequence parallelism runs every row whole
        share = cfg.model.share_prompt_forward and info.sequence_parallel == 1
        enable_shared_prompts(share, *frozen)
        if info.enabled:  # FSDP ranks must run matching forwards: one per update micro-batch
            policy.share_prompts = False
        return models


def _engine(cfg: Config, rollout_model: LoadedModel, info: DistInfo) -> RolloutEngine:
    if rollout_engine(cfg.rollout.engine, cfg.model.path) != "hf":
        return build_vllm_engine(cfg, rollout_model, info)
    engine = HFEngine(rollout_model, share_prefill=cfg.rollout.share_prefill)
    if info.sequence_group is None:
        return engine
    return GroupEngine(engine, info.sequence_group)  # a group's ranks take the same rollouts


def _teacher_engine(cfg: Config, teacher: LoadedModel | None, info: DistInfo) -> VLLMEngine | None:
    """The teacher's vLLM engine for `algorithm.distill.teacher_engine: vllm` (None: the
    teacher's log-probs are HF forwards of `teacher`)."""
    if teacher is None or not cfg.model.teacher_path:
        return None
    key = "algorithm.distill.teacher_engine"
    if rollout_engine(cfg.algorithm.distill.teacher_engine, cfg.model.teacher_path, key) == "hf":
        return None
    return build_vllm_teacher(cfg, teacher, info)


def _restore(state: TrainState, checkpoint: Path) -> None:
    """Model, optimizer, scheduler, sampler, step and best record from `checkpoint`."""
    saved = ckpt.load_checkpoint(
        checkpoint, policy=state.policy, optimizer=state.optimizer, info=state.info
    )
    state.scheduler.load_state_dict(saved["scheduler"])
    state.sampler.load_state_dict(saved["sampler"])
    state.step, state.best = int(saved["step"]), BestStep.from_dict(saved.get("best"))
    state.async_weights = saved.get("async_weights", {})
    state.async_carry = restore_carry(saved.get("async_carry"), state.records)
    state.engine.sync_weights(state.policy.model)
    if state.info.is_main:
        console.print(
            f"resumed from {checkpoint} (saved by {saved.get('world_size', 1)} ranks) at step {state.step}"
        )
