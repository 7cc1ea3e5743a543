"""What the trainer and an async rollout worker both set up: the policy model (vision frozen,
activation checkpointing, LoRA adapters), the run's tools, and a worker's copy of the policy
with its engine and caches."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from videorl.config import Config
from videorl.distributed import DistInfo
from videorl.errors import ConfigError
from videorl.models.loading import LoadedModel, load_model
from videorl.models.lora import apply_lora
from videorl.models.shared_prompt import enable_shared_prompts
from videorl.models.visual_cache import VisualCaches, share_visual_cache
from videorl.rewards.pool import ScoringPool
from videorl.rollout.engine import HFEngine
from videorl.rollout.tools import ToolRunner, ToolSpec, resolve_tools
from videorl.trainer.draw import Producer
from videorl.video.cache import VideoCache


def load_producer(cfg: Config, device: str) -> Producer:
    """An async rollout worker's models, engine and caches, set up as the one-process
    trainer's policy (vision frozen, LoRA adapters, visual cache, shared prompt forwards);
    its weights come from the trainer (`rollout/shared_weights.py`)."""
    info = DistInfo(device=device)
    loaded = load_model(
        cfg.model.path,
        revision=cfg.model.revision,
        dtype=getattr(torch, cfg.model.dtype),
        device=device,
        attn_implementation=cfg.model.attn_implementation,
        packing=cfg.model.packing,
    )
    policy = setup_policy(cfg, info, loaded)
    policy.model.requires_grad_(False)
    caches = (
        share_visual_cache(policy, policy) if cfg.model.reuse_visual_embeddings else VisualCaches()
    )
    enable_shared_prompts(cfg.model.share_prompt_forward, policy)
    return Producer(
        cfg,
        policy,
        HFEngine(policy, share_prefill=cfg.rollout.share_prefill),
        policy,
        VideoCache(cfg.video),
        tools=tool_runner(cfg),
        pool=ScoringPool(cfg.reward) if cfg.reward.workers > 1 else None,
        info=info,
        visual_caches=caches,
        sampling_logp=cfg.rollout.max_staleness > 0 and cfg.rollout.behaviour_logp == "sampling",
    )


def setup_policy(cfg: Config, info: DistInfo, policy: LoadedModel) -> LoadedModel:
    """The loaded policy set up to train: vision frozen, checkpointing, LoRA adapters."""
    if cfg.model.freeze_vision:
        for name, param in policy.model.named_parameters():
            if "visual" in name:
                param.requires_grad_(False)
    if cfg.model.gradient_checkpointing:  # transformers' current name, else the pre-5.2x one
        model: Any = policy.model  # a transformers model: methods nn.Module does not declare
        getattr(model, "activation_checkpointing_enable", model.gradient_checkpointing_enable)()
    return _with_lora(cfg, policy, info) if cfg.model.lora.enabled else policy


def _with_lora(cfg: Config, policy: LoadedModel, info: DistInfo) -> LoadedModel:
    """The policy with fresh LoRA adapters (model.lora); only the adapters train."""
    if info.enabled:
        raise ConfigError(
            f"model.lora.rank={cfg.model.lora.rank} with {info.world_size} ranks: sharding "
            "PEFT adapters with FSDP is not supported yet; train LoRA on one process "
            "(trainer.nproc=1) or set model.lora.rank=0"
        )
    if cfg.model.gradient_checkpointing:  # frozen embeddings: checkpointed blocks need grads
        hf_model: Any = policy.model
        hf_model.enable_input_require_grads()
    model = apply_lora(
        policy.model,
        cfg.model.lora,
        base=cfg.model.path,
        revision=cfg.model.revision,
        adapt_vision=not cfg.model.freeze_vision,
    )
    return replace(policy, model=model)


def tool_runner(cfg: Config) -> ToolRunner | None:
    """The runner of `rollout.tools` (after importing `rollout.tool_modules`), or None for
    single-turn rollouts; an unknown tool is a one-line `ConfigError` listing the choices.
    `seek_video_frames` caches its frame indexes under `<trainer.output_dir>/frame_index`."""
    specs = run_tools(cfg)
    if any(spec.name == "seek_video_frames" for spec in specs):  # its frame-index cache
        from videorl.rollout.tools import frame_index

        folder = Path(cfg.trainer.output_dir) / "frame_index"
        frame_index.configure(cfg.rollout.frame_search, folder)
    return ToolRunner(specs) if specs else None


def run_tools(cfg: Config) -> list[ToolSpec]:
    """The tools of `rollout.tools`, after importing `rollout.tool_modules` ([] for
    single-turn rollouts, whose modules are not imported): what a run and `--dry-run` check.
    An unknown tool or a module that does not import is a one-line `ConfigError`."""
    if not cfg.rollout.tools:
        return []
    return resolve_tools(cfg.rollout.tools, cfg.rollout.tool_modules)
