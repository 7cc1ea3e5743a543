"""The optimizer (AdamW over the trainable parameters) and its learning-rate schedule."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from videorl.config import Config


def lr_lambda(cfg: Config) -> Callable[[int], float]:
    """Linear warm-up, then constant or cosine decay to `min_lr_ratio`:
    f(s) = (s + 1) / (w + 1) for s < w; else r + (1 - r) * (1 + cos(pi * min(1, p))) / 2
    with p = (s - w) / (H - w), H = `optim.schedule_steps` (default `trainer.steps`).
    Example: H = 65,000, w = 0, r = 0: f(1200) = 0.99916 (T-GRPO's rate stays ~lr)."""
    optim = cfg.optim
    total = optim.schedule_steps or cfg.trainer.steps

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


def build_optimizer(
    cfg: Config, model: torch.nn.Module
) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.LambdaLR]:
    """AdamW (`optim.lr`, `betas`, `weight_decay`) over the parameters that train, and its
    `lr_lambda` schedule over `optim.schedule_steps` (default `trainer.steps`)."""
    optimizer = torch.optim.AdamW(
        [p for p in model.parameters() if p.requires_grad],
        lr=cfg.optim.lr,
        betas=cfg.optim.betas,
        weight_decay=cfg.optim.weight_decay,
    )
    return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda(cfg))
