"""Helpers for trainer tests that compare whole runs: metrics rows and checkpoint contents."""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from videorl.config import Config
from videorl.trainer.metrics import read_metrics

# A 4-step GRPO run with warm-up + cosine LR, a checkpoint every step, validation every 2.
REFERENCE = [
    "trainer.steps=4",
    "trainer.save_every=1",
    "trainer.keep_last=10",
    "trainer.val_every=2",
    "trainer.val_samples=2",
    "optim.warmup_steps=2",
    "optim.schedule=cosine",
    "optim.min_lr_ratio=0.1",
]

# rollout.mode: async one version behind, the trainer and its one worker on a thread each.
ASYNC_ONE_BEHIND = [
    "rollout.mode=async",
    "rollout.max_staleness=1",
    "trainer.cpu_threads=1",
    "rollout.worker_threads=1",
]


def async_recipe_rows(recipe: str, model: str, train: Path | str, out: Path) -> dict[int, Any]:
    """`recipe` trained 2 steps on `model` and `train` in async, one version behind: its
    metrics rows by step."""
    from videorl.api import resolve_config_path
    from videorl.config import load_config
    from videorl.trainer.loop import run_training

    overrides = [
        f"model.path={model}",
        f"data.train={train}",
        f"trainer.output_dir={out}",
        "trainer.steps=2",
        "trainer.save_every=0",
        "trainer.tensorboard=false",
        "rollout.max_new_tokens=16",
        *ASYNC_ONE_BEHIND,
    ]
    run_training(load_config(resolve_config_path(recipe), overrides))
    return metrics_by_step(out)


def with_output(config: Config, output_dir: Path) -> Config:
    return replace(config, trainer=replace(config.trainer, output_dir=str(output_dir)))


def metrics_by_step(output_dir: Path) -> dict[int, dict[str, Any]]:
    """Rows of `metrics.jsonl` by step (a resumed run's later rows win)."""
    return {row["step"]: row for row in read_metrics(Path(output_dir) / "metrics.jsonl")}


def checkpoint_state(checkpoint: Path) -> dict[str, Any]:
    """Everything a checkpoint restores: model and optimizer tensors (gathered from the DCP
    shards), scheduler, sampler, step, best record and rank 0's RNG state."""
    from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

    with tempfile.TemporaryDirectory() as tmp:
        dcp_to_torch_save(checkpoint / "dcp", Path(tmp) / "full.pt")
        tensors = torch.load(Path(tmp) / "full.pt", weights_only=False)
    state = torch.load(checkpoint / "state.pt", weights_only=False)
    state.pop("world_size", None)
    return {
        "dcp": tensors,
        "state": state,
        "rng": torch.load(checkpoint / "rng-0.pt", weights_only=False),
    }


def differences(a: Any, b: Any, where: str = "", atol: float = 0.0) -> list[str]:
    """Paths where two nested structures differ (tensors bitwise, or within `atol`)."""
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return [f"{where}: keys {sorted(map(str, set(a) ^ set(b)))[:4]} differ"]
        return [d for k in a for d in differences(a[k], b[k], f"{where}.{k}", atol)]
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            return [f"{where}: lengths {len(a)} != {len(b)}"]
        return [
            d
            for i, (x, y) in enumerate(zip(a, b, strict=True))
            for d in differences(x, y, f"{where}[{i}]", atol)
        ]
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.shape != b.shape or a.dtype != b.dtype:
            return [f"{where}: {tuple(a.shape)} {a.dtype} != {tuple(b.shape)} {b.dtype}"]
        if atol and a.is_floating_point():
            gap = float((a.double() - b.double()).abs().max()) if a.numel() else 0.0
            return [] if gap <= atol else [f"{where}: max gap {gap:.3g}"]
        return [] if torch.equal(a, b) else [f"{where}: tensors differ"]
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return [] if np.array_equal(a, b) else [f"{where}: arrays differ"]
    return [] if a == b else [f"{where}: {a!r} != {b!r}"]


def assert_same_checkpoint(got: Path, expected: Path, *, rng: bool = True, atol: float = 0.0):
    a, b = checkpoint_state(got), checkpoint_state(expected)
    if not rng:
        a.pop("rng"), b.pop("rng")
    found = differences(a, b, atol=atol)
    assert not found, f"{got} != {expected}: {found[:8]}"
