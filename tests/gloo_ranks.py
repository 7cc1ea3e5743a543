"""Run a function on N gloo ranks in spawned processes, for the tests that compare N ranks
with one process.

The ranks meet through a file store in the test's folder (no port to race for, no server
rank that a peer outlives). They do not tear gloo down: gloo's teardown, whether
`destroy_process_group` or the interpreter's exit with a live group, now and then aborts a
rank with SIGABRT ("terminate called without an active exception") after its work is done,
which failed CI twice on results that were already written. So each rank, once its
function has returned, marks itself done in a file and waits for every rank's mark (then no
rank still waits on a message from another), and leaves with `os._exit(0)`. A rank whose
function raises exits through `torch.multiprocessing`'s error path, so the test fails with
that rank's traceback.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

WAIT_FOR_PEERS_S = 600.0  # a peer that died is reported by the parent's join long before


def spawn_ranks(fn: Callable[..., None], args: tuple[Any, ...], size: int, folder: Path) -> None:
    """`fn(rank, *args)` on `size` gloo ranks; raises if any rank fails."""
    folder.mkdir(parents=True, exist_ok=True)
    mp.spawn(_rank_main, args=(fn, args, size, str(folder)), nprocs=size, join=True)


def _rank_main(
    rank: int, fn: Callable[..., None], args: tuple[Any, ...], size: int, folder: str
) -> None:
    torch.set_num_threads(1)
    store = f"file://{folder}/store"
    dist.init_process_group("gloo", init_method=store, rank=rank, world_size=size)
    fn(rank, *args)
    Path(folder, f"done.{rank}").touch()
    _wait_for_marks(Path(folder), size)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _wait_for_marks(folder: Path, size: int) -> None:
    """Block until every rank has written its done mark (a known point, not a guess)."""
    deadline = time.monotonic() + WAIT_FOR_PEERS_S
    while not all((folder / f"done.{rank}").exists() for rank in range(size)):
        if time.monotonic() > deadline:
            raise TimeoutError(f"ranks did not all finish within {WAIT_FOR_PEERS_S:.0f} s")
        time.sleep(0.01)
