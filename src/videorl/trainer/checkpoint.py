"""Atomic, sharded checkpoints: written to a temporary folder, then renamed into place.

A checkpoint `step-000012/` holds
- `dcp/`: model and optimizer state, sharded with `torch.distributed.checkpoint` (each rank
  writes its shard; it can be loaded at any world size, 1 included);
- `state.pt`: scheduler, sampler, step and best-validation record; `rng-<rank>.pt`;
- `model/`: the full model in Hugging Face format when the run has one process, or
  `model_meta/` (config, tokenizer, processor) for `videorl merge` when it has several.
A run killed at any moment leaves the previous checkpoint or the new one, never a
half-written folder under a final name.
"""

from __future__ import annotations

import os
import re
import shutil
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import (
    get_model_state_dict,
    get_optimizer_state_dict,
    set_model_state_dict,
    set_optimizer_state_dict,
)

from videorl.distributed import DistInfo, barrier
from videorl.errors import ConfigError
from videorl.outputs import refuse_nonempty, refuse_own_inputs, stage_folder, swap_into_place
from videorl.trainer.rng import rng_state, set_rng_state

if TYPE_CHECKING:
    from videorl.trainer.state import TrainState

_STEP_DIR = re.compile(r"^step-(\d+)$")


@contextmanager
def _single_process_ok() -> Iterator[None]:
    """DCP warns when no process group exists; one process is a supported case here."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="torch.distributed is disabled")
        yield


def save_model_folder(loaded: Any, folder: Path) -> None:
    """Model weights, config, generation config and tokenizer/processor in HF layout."""
    loaded.model.save_pretrained(folder)
    (loaded.processor or loaded.tokenizer).save_pretrained(folder)


def save_model_meta(loaded: Any, folder: Path) -> None:
    """Everything of an HF folder except the weights (for `videorl merge`)."""
    folder.mkdir(parents=True, exist_ok=True)
    loaded.model.config.save_pretrained(folder)
    loaded.model.generation_config.save_pretrained(folder)
    (loaded.processor or loaded.tokenizer).save_pretrained(folder)


def write_atomically(final: Path, fill: Callable[[Path], None], *, replace: bool = False) -> Path:
    """Call `fill(tmp)` on a fresh temporary folder beside `final`, then rename it into place.
    An existing non-empty `final` is replaced only with `replace=True` (a folder this run
    wrote, or `--overwrite`); otherwise it is refused before anything is written."""
    return stage_folder(final, fill, replace=replace)


def save_checkpoint(
    output_dir: str | Path,
    step: int,
    *,
    policy: Any,
    optimizer: torch.optim.Optimizer,
    extras: dict[str, Any],
    info: DistInfo,
    keep_last: int,
) -> Path:
    """Every rank calls this: shards via DCP, rank 0 writes the rest and renames."""
    root = Path(output_dir)
    final = root / f"step-{step:06d}"
    tmp = root / f".tmp-{final.name}"  # the same name on every rank
    if info.is_main:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
    barrier()
    state = {
        "model": get_model_state_dict(policy.model),
        "optim": get_optimizer_state_dict(policy.model, optimizer),
    }
    with _single_process_ok():
        dcp.save(state, checkpoint_id=str(tmp / "dcp"))
    torch.save(rng_state(), tmp / f"rng-{info.rank}.pt")
    if info.is_main:
        torch.save({**extras, "step": step, "world_size": info.world_size}, tmp / "state.pt")
        if info.enabled:
            save_model_meta(policy, tmp / "model_meta")
        else:
            save_model_folder(policy, tmp / "model")
    barrier()
    if info.is_main:
        swap_into_place(tmp, final)
        for old in list_checkpoints(root)[:-keep_last]:
            shutil.rmtree(old, ignore_errors=True)
    barrier()
    return final


def load_checkpoint(
    checkpoint: Path, *, policy: Any, optimizer: torch.optim.Optimizer, info: DistInfo
) -> dict[str, Any]:
    """Restore model and optimizer shards (any world size), this rank's RNG; return extras."""
    state: dict[str, Any] = {
        "model": get_model_state_dict(policy.model),
        "optim": get_optimizer_state_dict(policy.model, optimizer),
    }
    with _single_process_ok():
        dcp.load(state, checkpoint_id=str(checkpoint / "dcp"))
    set_model_state_dict(policy.model, state["model"])
    set_optimizer_state_dict(policy.model, optimizer, state["optim"])
    rng_file = checkpoint / f"rng-{info.rank}.pt"
    set_rng_state(
        torch.load(rng_file if rng_file.exists() else checkpoint / "rng-0.pt", weights_only=False)
    )
    return torch.load(checkpoint / "state.pt", map_location="cpu", weights_only=False)


def list_checkpoints(output_dir: str | Path) -> list[Path]:
    """Complete checkpoints, oldest first (temporary folders are ignored)."""
    root = Path(output_dir)
    if not root.is_dir():
        return []
    found = [
        (int(match.group(1)), p)
        for p in root.iterdir()
        if (match := _STEP_DIR.match(p.name)) and (p / "state.pt").is_file()
    ]
    return [p for _, p in sorted(found, key=lambda pair: pair[0])]


def resolve_resume(resume: str | None, output_dir: str | Path) -> Path | None:
    """`auto` -> the latest checkpoint in `output_dir` (or None); a path -> that checkpoint."""
    if resume is None:
        return None
    if resume == "auto":
        found = list_checkpoints(output_dir)
        return found[-1] if found else None
    path = Path(resume)
    if not (path / "state.pt").is_file():
        raise ConfigError(
            f"--resume {resume!r} is not a checkpoint folder (no state.pt); use auto or a step-NNNNNN folder"
        )
    return path


def merge_checkpoint(checkpoint: str | Path, out: str | Path, *, overwrite: bool = False) -> Path:
    """Gather a (sharded) checkpoint into one Hugging Face folder that `from_pretrained` loads;
    a LoRA run's adapter folder (or a step checkpoint holding one) is merged into its base.

    `out` must not be, hold or lie inside the checkpoint; a non-empty `out` is refused unless
    `overwrite`. Both are checked before the (slow) gather."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForImageTextToText

    from videorl.models.loading import VISION_MODEL_TYPES
    from videorl.models.lora import read_adapter_config

    checkpoint = Path(checkpoint)
    refuse_own_inputs(out, [("checkpoint", checkpoint)], "OUT")
    refuse_nonempty(out, overwrite=overwrite, option="OUT")
    for adapter in (checkpoint, checkpoint / "model"):  # a LoRA run's final/ or step folder
        if read_adapter_config(adapter) is not None and not (adapter / "config.json").is_file():
            return merge_adapter_folder(adapter, out, overwrite=overwrite)
    if not (checkpoint / "dcp").is_dir():
        raise ConfigError(
            f"{str(checkpoint)!r} has no dcp/ shards; give a step-NNNNNN checkpoint folder"
        )
    meta = checkpoint / ("model_meta" if (checkpoint / "model_meta").is_dir() else "model")
    config = AutoConfig.from_pretrained(meta)
    factory = (
        AutoModelForImageTextToText
        if config.model_type in VISION_MODEL_TYPES
        else AutoModelForCausalLM
    )
    model = factory.from_config(config, dtype=getattr(config, "dtype", None) or torch.float32)
    state = {"model": model.state_dict()}
    with _single_process_ok():
        dcp.load(state, checkpoint_id=str(checkpoint / "dcp"))
    model.load_state_dict(state["model"])

    def fill(tmp: Path) -> None:
        model.save_pretrained(tmp)
        for name in os.listdir(meta):
            if name.endswith((".json", ".jinja", ".txt")) and not (tmp / name).exists():
                shutil.copy(meta / name, tmp / name)

    return write_atomically(Path(out), fill, replace=overwrite)


def merge_adapter_folder(adapter: Path, out: str | Path, *, overwrite: bool = False) -> Path:
    """A LoRA adapter folder -> a full Hugging Face folder of its base with the adapter
    merged (`W + scale * B A`), with the processor; loads with plain transformers."""
    from videorl.models.loading import load_model

    loaded = load_model(adapter)
    return write_atomically(
        Path(out), lambda tmp: save_model_folder(loaded, tmp), replace=overwrite
    )


class Checkpointer:
    """A run's checkpoints: every `trainer.save_every` steps (0: at the end only), keeping
    the newest `trainer.keep_last`; remembers the last step it saved so that a final or
    Ctrl-C save never writes the same step twice."""

    def __init__(self, state: TrainState) -> None:
        self.out = Path(state.cfg.trainer.output_dir)
        self.every = state.cfg.trainer.save_every
        exists = (self.out / f"step-{state.step:06d}" / "state.pt").is_file()
        self.saved_step: int | None = state.step if exists else None

    def should_save(self, step: int) -> bool:
        return bool(self.every) and step % self.every == 0

    def save(self, state: TrainState) -> Path:
        """The checkpoint of `state.step` (model, optimizer, scheduler, sampler, best)."""
        extras: dict[str, Any] = {
            "scheduler": state.scheduler.state_dict(),
            "sampler": state.sampler_state(),
            "best": state.best.to_dict() if state.best else {},
        }
        if state.rollouts is not None:  # async: the older weights the next batches need
            extras["async_weights"] = state.rollouts.held_versions(state.step)
            extras["async_carry"] = state.rollouts.saved_carry(state.step)
        path = save_checkpoint(
            self.out,
            state.step,
            policy=state.policy,
            optimizer=state.optimizer,
            extras=extras,
            info=state.info,
            keep_last=state.cfg.trainer.keep_last,
        )
        self.saved_step = state.step
        return path

    def save_unsaved(self, state: TrainState) -> Path:
        """The checkpoint of `state.step`, written unless it already was."""
        if self.saved_step == state.step:
            return self.out / f"step-{state.step:06d}"
        return self.save(state)
