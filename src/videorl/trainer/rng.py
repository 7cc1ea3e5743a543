"""The run's random streams (Python, NumPy, torch CPU and the current CUDA device): their
state for checkpoints, and a block that draws from streams of its own.

Validation samples its answers inside `isolated(seed)`, so that switching validation on,
or changing `trainer.val_every`, leaves training exactly as it was: its draws neither read
nor advance the streams that rollouts and data order use.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch


def rng_state() -> dict[str, Any]:
    state = {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state(state["cuda"])


def derived_seed(*keys: int) -> int:
    """A 32-bit seed for the streams of `keys` (for example the run's seed and a step)."""
    return int(np.random.SeedSequence(list(keys)).generate_state(1)[0])


@contextmanager
def isolated(seed: int) -> Iterator[None]:
    """Seed every stream with `seed` for the block, then restore them as they were."""
    saved = rng_state()
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # CPU and every CUDA device
    try:
        yield
    finally:
        set_rng_state(saved)
