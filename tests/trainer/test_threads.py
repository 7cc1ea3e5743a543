"""CPU threads: cores / local ranks by default, OMP_NUM_THREADS and trainer.cpu_threads win."""

from __future__ import annotations

import os
import threading

import pytest
import torch

from videorl.config import TrainerConfig
from videorl.errors import ConfigError
from videorl.rewards.pool import use_one_thread
from videorl.trainer.threads import (
    available_cores,
    busy_cores_hint,
    busy_cores_now,
    cgroup_cpu_limit,
    core_blocks,
    pin_process,
    process_cores,
    resolve_cpu_threads,
    set_cpu_threads,
)


@pytest.fixture
def restore_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_cores_are_divided_among_local_ranks():
    assert resolve_cpu_threads(0, {}, cores=8) == 8
    assert resolve_cpu_threads(0, {"LOCAL_WORLD_SIZE": "4"}, cores=8) == 2
    assert resolve_cpu_threads(0, {"LOCAL_WORLD_SIZE": "4"}, cores=2) == 1  # never 0
    assert resolve_cpu_threads(0, {"LOCAL_WORLD_SIZE": "junk"}, cores=3) == 3


def test_the_last_minutes_load_does_not_set_the_threads(monkeypatch):
    monkeypatch.setattr(os, "getloadavg", lambda: (15.0, 15.0, 15.0))
    assert resolve_cpu_threads(0, {}, cores=2) == 2
    assert resolve_cpu_threads(0, {"LOCAL_WORLD_SIZE": "2"}, cores=16) == 8


def test_busy_cores_give_a_hint_not_fewer_threads():
    hint = busy_cores_hint(2, busy=1.9)
    assert "1.9 of" in hint and "trainer.cpu_threads=1" in hint
    assert busy_cores_hint(2, busy=0.2) == ""
    assert busy_cores_hint(1, busy=2.0) == ""  # one thread waits on nobody


def test_busy_cores_are_read_from_proc_stat(tmp_path):
    stat = tmp_path / "stat"
    stat.write_text("cpu  100 0 100 800 0 0 0 0 0 0\ncpu0 1 2 3\n")
    assert busy_cores_now(0.0, stat) is None  # no time passed between the two reads
    assert busy_cores_now(0.0, tmp_path / "missing") is None
    assert 0.0 <= (busy_cores_now(0.05) or 0.0) <= (os.cpu_count() or 1)


def test_user_choices_win():
    assert resolve_cpu_threads(0, {"OMP_NUM_THREADS": "3"}, cores=8) is None
    assert resolve_cpu_threads(5, {"OMP_NUM_THREADS": "3", "LOCAL_WORLD_SIZE": "4"}, cores=8) == 5
    assert resolve_cpu_threads(0, {"OMP_NUM_THREADS": ""}, cores=8) == 8  # empty: unset


def test_available_cores_follow_affinity_and_cgroup_quota(tmp_path):
    assert 1 <= available_cores() <= len(os.sched_getaffinity(0))
    quota = tmp_path / "cpu.max"
    quota.write_text("150000 100000\n")
    assert cgroup_cpu_limit(quota) == 1
    quota.write_text("max 100000\n")
    assert cgroup_cpu_limit(quota) is None
    assert cgroup_cpu_limit(tmp_path / "missing") is None


def test_set_cpu_threads_applies_on_cpu_only(restore_threads):
    auto = resolve_cpu_threads(0, {})
    torch.set_num_threads(available_cores() + 3)  # oversubscribed: lowered to the fair share
    assert set_cpu_threads(0, "cpu", env={}) <= max(auto, resolve_cpu_threads(0, {}))  # type: ignore[operator, type-var]  # on the CPU both are counts
    torch.set_num_threads(1)  # a program's own lower choice is kept
    assert set_cpu_threads(0, "cpu", env={}) == 1
    torch.set_num_threads(5)
    assert set_cpu_threads(0, "cpu", env={"OMP_NUM_THREADS": "9"}) == 5
    assert set_cpu_threads(0, "cuda", env={}) == 5
    assert set_cpu_threads(2, "cpu", env={"OMP_NUM_THREADS": "1"}) == 2


def test_scoring_workers_use_one_thread(monkeypatch, restore_threads):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    torch.set_num_threads(2)
    use_one_thread()
    assert torch.get_num_threads() == 1 and os.environ["OMP_NUM_THREADS"] == "1"
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    torch.set_num_threads(2)
    use_one_thread()  # the user's setting is kept
    assert torch.get_num_threads() == 2


def test_cpu_threads_config_is_validated():
    assert TrainerConfig(cpu_threads=3).cpu_threads == 3
    with pytest.raises(ConfigError, match=r"trainer\.cpu_threads=-1"):
        TrainerConfig(cpu_threads=-1)


def test_core_blocks_are_disjoint_consecutive_and_fit_the_ranks_share():
    cores = [0, 1, 2, 3, 4, 5, 6, 7]
    assert core_blocks([1, 1], cores) == [frozenset({0}), frozenset({1})]
    assert core_blocks([2, 3, 3], cores) == [
        frozenset({0, 1}),
        frozenset({2, 3, 4}),
        frozenset({5, 6, 7}),
    ]
    assert core_blocks([1, 2], cores, local_rank=1, ranks=2) == [
        frozenset({4}),
        frozenset({5, 6}),
    ]  # rank 1: 4..7
    assert core_blocks([4, 1], cores, local_rank=0, ranks=2) is None  # 5 of rank 0's 4
    assert core_blocks([1, 1], [3]) is None
    assert core_blocks([0, 1], cores) is None


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs CPU affinity")
def test_pin_process_moves_every_thread_and_new_ones_inherit():
    before = process_cores()
    started, release = threading.Event(), threading.Event()
    seen: dict[str, set[int]] = {}

    def old_thread() -> None:
        started.set()
        release.wait()
        seen["old"] = os.sched_getaffinity(0)

    thread = threading.Thread(target=old_thread)
    thread.start()
    started.wait()
    try:
        pin_process({before[0]})
        late = threading.Thread(target=lambda: seen.update(new=os.sched_getaffinity(0)))
        late.start()
        late.join()
        release.set()
        thread.join()
        assert seen == {"old": {before[0]}, "new": {before[0]}}
        assert os.sched_getaffinity(0) == {before[0]}
    finally:
        release.set()
        pin_process(before)
    assert process_cores() == before
