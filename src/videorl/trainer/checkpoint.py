"""Atomic checkpoints: written to a temporary folder, then renamed into place.

A checkpoint `step-000012/` holds `model/` (Hugging Face format, loadable with
`from_pretrained`) and `state.pt` (optimizer, scheduler, RNG states, sampler, step, extras).
A run killed at any moment leaves either the previous checkpoint or the new one, never a
half-written folder under a final name.
"""

from __future__ import annotations

import os
import random
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch

from videorl.errors import ConfigError

_STEP_DIR = re.compile(r"^step-(\d+)$")


def rng_state() -> dict[str, Any]:
    return {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])


def save_model_folder(loaded: Any, folder: Path) -> None:
    """Model weights, config, generation config and tokenizer/processor in HF layout."""
    loaded.model.save_pretrained(folder)
    (loaded.processor or loaded.tokenizer).save_pretrained(folder)


def write_atomically(final: Path, fill: Any) -> Path:
    """Call `fill(tmp)` on a fresh temporary folder beside `final`, then rename it over."""
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.parent / f".tmp-{final.name}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    fill(tmp)
    if final.exists():
        old = final.parent / f".old-{final.name}-{os.getpid()}"
        os.replace(final, old)
        os.replace(tmp, final)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, final)
    return final


def save_checkpoint(output_dir: str | Path, step: int, loaded: Any, state: dict[str, Any], keep_last: int) -> Path:
    """Write `output_dir/step-NNNNNN` atomically and delete all but the last `keep_last`."""
    root = Path(output_dir)

    def fill(tmp: Path) -> None:
        save_model_folder(loaded, tmp / "model")
        torch.save({**state, "step": step, "rng": rng_state()}, tmp / "state.pt")

    path = write_atomically(root / f"step-{step:06d}", fill)
    for old in list_checkpoints(root)[:-keep_last]:
        shutil.rmtree(old, ignore_errors=True)
    return path


def list_checkpoints(output_dir: str | Path) -> list[Path]:
    """Complete checkpoints, oldest first (temporary folders are ignored)."""
    root = Path(output_dir)
    if not root.is_dir():
        return []
    found = [p for p in root.iterdir() if _STEP_DIR.match(p.name) and (p / "state.pt").is_file()]
    return sorted(found, key=lambda p: int(_STEP_DIR.match(p.name).group(1)))


def resolve_resume(resume: str | None, output_dir: str | Path) -> Path | None:
    """`auto` -> the latest checkpoint in `output_dir` (or None); a path -> that checkpoint."""
    if resume is None:
        return None
    if resume == "auto":
        found = list_checkpoints(output_dir)
        return found[-1] if found else None
    path = Path(resume)
    if not (path / "state.pt").is_file():
        raise ConfigError(f"--resume {resume!r} is not a checkpoint folder (no state.pt); use auto or a step-NNNNNN folder")
    return path


def load_state(checkpoint: Path) -> dict[str, Any]:
    return torch.load(checkpoint / "state.pt", map_location="cpu", weights_only=False)
