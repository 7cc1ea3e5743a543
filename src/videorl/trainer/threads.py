"""CPU threads per training process: the cores this process may use, shared among local ranks.

torch starts one intra-op thread per core it sees. Several torch processes on one small
machine (torchrun ranks, or other jobs) then run `ranks x cores` busy threads on `cores`
cores, and a step gets many times slower. On CPU the trainer therefore sets

    threads = max(1, min(available_cores, free_cores) // local_ranks)

where `available_cores` is the CPU affinity of the process (`os.sched_getaffinity`), capped
by a cgroup CPU quota when one is set, `free_cores = round(available_cores - load)` with
`load` the 1-minute load average (cores other jobs keep busy: an OpenMP thread on a busy
core makes every parallel op wait for it; measured on 2 shared cores, 2 threads made
quickstart steps 4-17x slower than 1), and `local_ranks` is torchrun's `LOCAL_WORLD_SIZE`.
That share only ever lowers torch's count (a program that already chose fewer threads with
`torch.set_num_threads` keeps them). An explicit `trainer.cpu_threads` wins; a user-set
`OMP_NUM_THREADS` is left alone. Scoring workers use one thread each (`rewards/pool.py`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path

import torch

CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")


def cgroup_cpu_limit(path: Path = CGROUP_CPU_MAX) -> int | None:
    """Whole cores allowed by a cgroup v2 quota (`cpu.max` = "quota period"), or None."""
    try:
        quota, period = path.read_text().split()[:2]
    except (OSError, ValueError):
        return None
    if quota == "max":
        return None
    try:
        return max(1, math.floor(int(quota) / int(period)))
    except (ValueError, ZeroDivisionError):
        return None


def available_cores() -> int:
    """Cores this process may run on: its CPU affinity, capped by a cgroup quota."""
    cores = (
        len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    )
    limit = cgroup_cpu_limit()
    return max(1, min(cores, limit) if limit else cores)


def _load_average() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:  # not available on this platform
        return 0.0


def resolve_cpu_threads(
    configured: int,
    env: Mapping[str, str] | None = None,
    cores: int | None = None,
    load: float | None = None,
) -> int | None:
    """Intra-op threads for this process, or None to leave torch as the user set it.

    `configured > 0` (`trainer.cpu_threads`) is used as given; otherwise a non-empty
    `OMP_NUM_THREADS` is the user's choice (None); otherwise the free cores (`cores` minus
    the 1-minute `load`, at least 1) divided among `LOCAL_WORLD_SIZE` ranks.
    """
    env = os.environ if env is None else env
    if configured > 0:
        return configured
    if env.get("OMP_NUM_THREADS", "").strip():
        return None
    try:
        local_ranks = max(1, int(env.get("LOCAL_WORLD_SIZE", "1")))
    except ValueError:
        local_ranks = 1
    cores = cores if cores is not None else available_cores()
    load = _load_average() if load is None else load
    free = max(1, min(cores, round(cores - load)))
    return max(1, free // local_ranks)


def set_cpu_threads(configured: int, device: str, env: Mapping[str, str] | None = None) -> int:
    """Apply `resolve_cpu_threads` when training on the CPU (the automatic share as a cap on
    torch's current count, `trainer.cpu_threads` as given); returns torch's thread count."""
    if device.startswith("cpu"):
        threads = resolve_cpu_threads(configured, env)
        if threads is not None and configured <= 0:
            threads = min(threads, torch.get_num_threads())
        if threads is not None and threads != torch.get_num_threads():
            torch.set_num_threads(threads)
    return torch.get_num_threads()
