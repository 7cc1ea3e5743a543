"""CPU threads per training process: the cores this process may use, shared among local ranks.

torch starts one intra-op thread per core it sees. Several torch processes on one small
machine (torchrun ranks) then run `ranks x cores` busy threads on `cores` cores, and a step
gets many times slower. On CPU the trainer therefore sets

    threads = max(1, available_cores // local_ranks)

where `available_cores` is the CPU affinity of the process (`os.sched_getaffinity`), capped
by a cgroup CPU quota when one is set, and `local_ranks` is torchrun's `LOCAL_WORLD_SIZE`.
The share only ever lowers torch's count (a program that already chose fewer threads with
`torch.set_num_threads` keeps them). An explicit `trainer.cpu_threads` wins; a user-set
`OMP_NUM_THREADS` is left alone. Scoring workers use one thread each (`rewards/pool.py`).

The rule does not look at other jobs: a load average says what the last minute was, not
what the run's lifetime will be (an earlier rule that subtracted it left a run started
right after other work on one thread for good). When other jobs keep the cores busy the
whole time, `busy_cores_hint` says so once and names the setting (`bench/threads.py`
measures both cases).

Async rollout workers on the CPU (`rollout.pin_cores`) are pinned: the trainer and
each worker get consecutive, disjoint blocks of the rank's cores, as many as their threads
(`core_blocks`), when those fit. Unpinned, the scheduler moves two busy processes between
the cores and each runs slower than alone (bench/results/async.json).
"""

from __future__ import annotations

import itertools
import math
import os
import time
from collections.abc import Collection, Mapping, Sequence
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
    cores = len(process_cores())
    limit = cgroup_cpu_limit()
    return max(1, min(cores, limit) if limit else cores)


def process_cores() -> list[int]:
    """The cores this process may run on, in order (its CPU affinity)."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def core_blocks(
    sizes: Sequence[int], cores: Sequence[int], local_rank: int = 0, ranks: int = 1
) -> list[frozenset[int]] | None:
    """Disjoint blocks of `sizes` cores each, taken in order from this rank's share of
    `cores` (rank r: its r-th `len(cores) // ranks`); None when they need more than it."""
    per = len(cores) // max(1, ranks)
    share = list(cores)[local_rank * per : (local_rank + 1) * per]
    if not sizes or min(sizes) < 1 or sum(sizes) > len(share):
        return None
    ends = list(itertools.accumulate(sizes))
    return [frozenset(share[end - size : end]) for end, size in zip(ends, sizes, strict=True)]


def pin_process(cores: Collection[int]) -> None:
    """Every thread of this process onto `cores` (threads it starts later inherit them)."""
    tasks = Path("/proc/self/task")
    tids = [int(t.name) for t in tasks.iterdir()] if tasks.is_dir() else [0]
    for tid in tids:
        try:
            os.sched_setaffinity(tid, cores)
        except ProcessLookupError:  # the thread ended meanwhile
            continue


def resolve_cpu_threads(
    configured: int, env: Mapping[str, str] | None = None, cores: int | None = None
) -> int | None:
    """Intra-op threads for this process, or None to leave torch as the user set it.

    `configured > 0` (`trainer.cpu_threads`) is used as given; otherwise a non-empty
    `OMP_NUM_THREADS` is the user's choice (None); otherwise `cores` (the process's
    available cores) divided among `LOCAL_WORLD_SIZE` ranks, at least 1.
    """
    env = os.environ if env is None else env
    if configured > 0:
        return configured
    if env.get("OMP_NUM_THREADS", "").strip():
        return None
    cores = cores if cores is not None else available_cores()
    return max(1, cores // local_ranks(env))


def local_ranks(env: Mapping[str, str] | None = None) -> int:
    """Trainer ranks on this machine: torchrun's `LOCAL_WORLD_SIZE` (1 without torchrun)."""
    env = os.environ if env is None else env
    try:
        return max(1, int(env.get("LOCAL_WORLD_SIZE", "1")))
    except ValueError:
        return 1


PROC_STAT = Path("/proc/stat")


def _cpu_times(path: Path) -> tuple[int, int] | None:
    """(busy, total) jiffies of all cores from the `cpu` line of /proc/stat, or None."""
    try:
        fields = [int(x) for x in path.read_text().splitlines()[0].split()[1:]]
    except (OSError, ValueError, IndexError):
        return None
    idle = sum(fields[3:5])  # idle + iowait
    return sum(fields) - idle, sum(fields)


def _load_average() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:  # not available on this platform
        return 0.0


def _own_cpu_s() -> float:
    """CPU seconds used so far by every thread of this process."""
    return sum(os.times()[:2])


def busy_cores_now(window_s: float = 0.1, path: Path = PROC_STAT) -> float | None:
    """Cores kept busy by other processes over the next `window_s`: the busy share of all
    cores' time x cores, less this process's own CPU time; None where /proc/stat is missing."""
    before, own = _cpu_times(path), _own_cpu_s()
    started = time.perf_counter()
    time.sleep(window_s)
    after, own = _cpu_times(path), _own_cpu_s() - own
    wall = time.perf_counter() - started
    if before is None or after is None or after[1] <= before[1] or wall <= 0:
        return None
    share = (after[0] - before[0]) / (after[1] - before[1])
    return max(0.0, share * (os.cpu_count() or 1) - own / wall)


def busy_cores_hint(threads: int, busy: float | None = None) -> str:
    """A one-line hint when other processes keep this machine's cores busy right now, else "".

    A hint only: the threads stay `cores / ranks`, since the load at startup need not last.
    """
    if threads < 2:
        return ""
    if busy is None and _load_average() >= 0.75:  # the cheap check first
        busy = busy_cores_now()
    if busy is None or busy < 0.75:
        return ""
    return (
        f"{busy:.1f} of {os.cpu_count()} cores are busy with other processes: if they keep "
        f"running, {threads} threads per process wait on them (up to 10x slower steps, "
        "bench/results/threads.json); trainer.cpu_threads=1 or OMP_NUM_THREADS=1 avoids that"
    )


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
