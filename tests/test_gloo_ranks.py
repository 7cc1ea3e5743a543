"""`tests/gloo_ranks.py`: ranks run to their end without gloo teardown, and a rank that
raises fails the run with its traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from tests.gloo_ranks import spawn_ranks

pytestmark = pytest.mark.slow  # multi-process


def _sum_ranks(rank: int, out: str) -> None:
    total = torch.tensor([float(rank + 1)])
    dist.all_reduce(total)
    torch.save(total, f"{out}.{rank}")


def _rank_one_raises(rank: int) -> None:
    if rank == 1:
        raise ValueError("rank one failed on purpose")
    dist.barrier()  # rank 0 waits here until the parent ends it


def test_every_rank_runs_and_exits_cleanly(tmp_path: Path):
    spawn_ranks(_sum_ranks, (str(tmp_path / "sum"),), 2, tmp_path / "ranks")
    assert [float(torch.load(tmp_path / f"sum.{r}")) for r in range(2)] == [3.0, 3.0]
    assert sorted(p.name for p in (tmp_path / "ranks").glob("done.*")) == ["done.0", "done.1"]


def test_a_rank_that_raises_fails_the_run_with_its_message(tmp_path: Path):
    with pytest.raises(mp.ProcessRaisedException, match="rank one failed on purpose"):
        spawn_ranks(_rank_one_raises, (), 2, tmp_path / "ranks")
