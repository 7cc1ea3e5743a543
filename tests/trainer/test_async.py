"""`rollout.mode: async` (docs/async.md): staleness 0 is the synchronous run bit for bit;
staleness 1 trains stale batches within the bound, with the behaviour correction."""

from __future__ import annotations

import contextlib
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from tests.trainer.pause import PausePoint, _running
from tests.trainer.runs import assert_same_checkpoint, metrics_by_step
from tests.trainer.test_distributed import _env
from videorl.trainer.checkpoint import list_checkpoints
from videorl.trainer.loop import run_training

pytestmark = pytest.mark.slow  # spawns rollout worker processes

ONE_THREAD = ["trainer.cpu_threads=1", "rollout.worker_threads=1"]
TIMED = ("time/", "perf/", "async/")


def _untimed(row: dict) -> dict:
    return {k: v for k, v in row.items() if not k.startswith(TIMED) and "seconds" not in k}


def _weights(out) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(out / "final" / "model.safetensors"))


@pytest.mark.parametrize("recipe", ["grpo", "orarl"])
def test_staleness_zero_is_the_sync_run(make_config, tmp_path, recipe):
    steps = ["trainer.steps=3"]
    sync, _ = make_config(recipe, *steps, *ONE_THREAD, output=tmp_path / "sync")
    run_training(sync)
    asynchronous, _ = make_config(
        recipe,
        *steps,
        *ONE_THREAD,
        "rollout.mode=async",
        "rollout.max_staleness=0",
        output=tmp_path / "async",
    )
    run_training(asynchronous)
    a, b = metrics_by_step(tmp_path / "sync"), metrics_by_step(tmp_path / "async")
    assert sorted(a) == sorted(b) == [1, 2, 3]
    for step in a:
        assert _untimed(a[step]) == _untimed(b[step]), f"step {step} differs"
        assert b[step]["async/staleness_max"] == 0
    wa, wb = _weights(tmp_path / "sync"), _weights(tmp_path / "async")
    assert all(torch.equal(wa[k], wb[k]) for k in wa)


def test_staleness_one_trains_stale_batches_and_repeats(make_config, tmp_path):
    """k = 1: batch t is sampled by the weights of step t - 1 (verl's one-step off-policy),
    the same prompts train in the same steps as sync, the behaviour weights are reported,
    and two runs give the same metrics (the version is a function of the step)."""
    steps = ["trainer.steps=3", *ONE_THREAD]
    sync, _ = make_config("grpo", *steps, output=tmp_path / "sync")
    run_training(sync)
    runs = []
    for name in ("a", "b"):
        config, _ = make_config(
            "grpo", *steps, "rollout.mode=async", "rollout.max_staleness=1", output=tmp_path / name
        )
        run_training(config)
        runs.append(metrics_by_step(tmp_path / name))
    reference = metrics_by_step(tmp_path / "sync")
    first, second = runs
    assert [first[s]["async/staleness_max"] for s in (1, 2, 3)] == [0, 1, 1]
    for step in (1, 2, 3):
        assert first[step]["batch_ids"] == reference[step]["batch_ids"]
        assert _untimed(first[step]) == _untimed(second[step])
        assert 0 <= first[step]["async/trainer_idle"] <= 1
    for step in (2, 3):  # stale rows: the correction ran on every one of their tokens
        assert first[step]["async/stale_tokens"] > 0
        assert first[step]["async/is_weight_max"] >= first[step]["async/is_weight_mean"] > 0
    assert first[3]["actor/loss"] != reference[3]["actor/loss"]  # other weights sampled it


WORKER = Path(__file__).with_name("async_worker.py")
FAULT_STEPS = [
    "trainer.steps=4",
    "trainer.save_every=1",
    "trainer.keep_last=10",
    "rollout.mode=async",
    "rollout.max_staleness=1",
    *ONE_THREAD,
]


@pytest.fixture(scope="module")
def async_reference(build_config, tmp_path_factory):
    """An uninterrupted 4-step async run (staleness 1), checkpointed every step."""
    out = tmp_path_factory.mktemp("async_reference") / "run"
    config, _ = build_config("grpo", out, *FAULT_STEPS)
    run_training(config)
    return out


def _children(pid: int) -> list[int]:
    """The live processes whose parent is `pid` (the spawned workers among them)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid and fields[0] not in ("Z", "X"):
                found.append(int(stat.parent.name))
    return found


def _rollout_workers(pid: int) -> list[int]:
    return [
        child
        for child in _children(pid)
        if b"spawn_main" in Path(f"/proc/{child}/cmdline").read_bytes()
    ]


def _wait_gone(pids: list[int]) -> None:
    deadline = time.monotonic() + 120  # a bound on a hang, not a guess at a duration
    while any(_running(p) for p in pids):
        assert time.monotonic() < deadline, f"processes {pids} outlived their trainer"
        time.sleep(0.05)


def _held_run(build_config, tmp_path: Path):
    """The 4-step async run in a subprocess, held after step 2's checkpoint (`pause.py`),
    its output (stdout and stderr) in `run.log`: (config, out, point, process, workers)."""
    out = tmp_path / "run"
    config, overrides = build_config("grpo", out, *FAULT_STEPS)
    point = PausePoint(tmp_path / "pause", step=2, ranks=1)
    with open(f"{out}.log", "w") as log:
        proc = subprocess.Popen(
            [sys.executable, str(WORKER), *overrides],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**_env(), **point.env()},
        )
    point.wait(proc)
    return config, out, point, proc, _rollout_workers(proc.pid)


def _resume_and_compare(config, out: Path, reference: Path) -> None:
    run_training(config, resume="auto")
    got, expected = metrics_by_step(out), metrics_by_step(reference)
    for step in (3, 4):
        assert got[step]["batch_ids"] == expected[step]["batch_ids"]
    assert_same_checkpoint(out / "step-000004", reference / "step-000004")


def test_kill_9_of_the_trainer_then_resume(build_config, async_reference, tmp_path):
    """SIGKILL the trainer held after step 2's checkpoint: its workers exit, and the resumed
    run ends with the uninterrupted run's batches, weights, optimizer and sampler."""
    config, out, _, proc, workers = _held_run(build_config, tmp_path)
    assert len(workers) == 1
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    _wait_gone(workers)
    assert [p.name for p in list_checkpoints(out)] == ["step-000001", "step-000002"]
    _resume_and_compare(config, out, async_reference)


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores")
def test_trainer_and_worker_are_pinned_to_cores_of_their_own(build_config, tmp_path):
    """One thread each (rollout.pin_cores): the trainer's every thread on the first
    core, the worker's on the next; read while the run is held after step 2."""
    _, _, point, proc, workers = _held_run(build_config, tmp_path)
    first, second = sorted(os.sched_getaffinity(0))[:2]
    try:
        trainer = {os.sched_getaffinity(int(t.name)) == {first} for t in _tasks(proc.pid)}
        worker = {os.sched_getaffinity(int(t.name)) == {second} for t in _tasks(workers[0])}
        assert len(workers) == 1 and trainer == worker == {True}
    finally:
        proc.kill()
        proc.wait()
        point.release()
        _wait_gone(workers)


def _tasks(pid: int) -> list[Path]:
    return list(Path(f"/proc/{pid}/task").iterdir())


def test_kill_9_of_a_worker_stops_in_one_line_then_resume(build_config, async_reference, tmp_path):
    """SIGKILL the rollout worker while the trainer is held after step 2: the run stops with
    one line naming the worker (no hang, no traceback), and resumes as if never stopped."""
    config, out, point, proc, (worker,) = _held_run(build_config, tmp_path)
    os.kill(worker, signal.SIGKILL)
    _wait_gone([worker])
    point.release()
    proc.wait(timeout=600)
    output = Path(f"{out}.log").read_text()
    assert proc.returncode == 2
    lines = [line for line in output.splitlines() if "error:" in line]
    assert len(lines) == 1 and "rollout worker 0 died" in lines[0], output[-2000:]
    assert "Traceback" not in output
    _resume_and_compare(config, out, async_reference)


def test_ctrl_c_of_the_trainer_saves_then_resume(build_config, async_reference, tmp_path):
    """Ctrl-C of the trainer held after step 2: it saves, stops its worker and exits; the
    resumed run ends as the uninterrupted one."""
    config, out, point, proc, workers = _held_run(build_config, tmp_path)
    os.kill(proc.pid, signal.SIGINT)
    point.wait_interrupted(proc)
    point.release()
    proc.wait(timeout=600)
    _wait_gone(workers)
    assert [p.name for p in list_checkpoints(out)] == ["step-000001", "step-000002"]
    _resume_and_compare(config, out, async_reference)


TOOL_SHAPE = [
    "rollout.tools=[get_clip]",
    "rollout.max_turns=2",
    "rollout.max_total_tokens=400",
    "reward.plugins={temporal_grounding: 'tests.trainer.tool_reward:reward'}",
]
DYNAMIC_SAMPLING = [
    "algorithm.dynamic_sampling.enabled=true",
    "algorithm.dynamic_sampling.metric=task",
]
# Each recipe shape of configs/ (estimator, rows, rewards, loss, tools, adapters), shrunk to
# the tiny model, as (conftest recipe, extra overrides, staleness).
SHAPES = {
    "orarl": ("orarl", [], 1),
    "grpo": ("grpo", [], 1),
    "dr_grpo": ("grpo", ["algorithm.estimator=dr_grpo"], 1),
    "rloo": ("grpo", ["algorithm.estimator=rloo"], 1),
    "gspo": ("grpo", ["algorithm.loss.name=gspo"], 1),
    "taro": ("taro", [], 1),
    "tgrpo": ("grpo", ["algorithm.temporal_contrast.enabled=true"], 1),
    "opdvr": ("opdvr", [], 1),
    "grpd": ("grpd", [], 1),
    "tools": ("grpo", TOOL_SHAPE, 1),
    "lora": ("grpo", ["model.lora.rank=4"], 1),
    "reward_pool": ("orarl", ["reward.num_workers=2"], 1),  # the worker starts processes of its own
    "dapo_dynamic_sampling": ("grpo", DYNAMIC_SAMPLING, 0),
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_recipe_shape_trains_in_async(make_config, tmp_path, shape):
    recipe, extra, staleness = SHAPES[shape]
    config, _ = make_config(
        recipe,
        "trainer.steps=2",
        *ONE_THREAD,
        *extra,
        "rollout.mode=async",
        f"rollout.max_staleness={staleness}",
    )
    run_training(config)
    rows = metrics_by_step(tmp_path / recipe)
    assert sorted(rows) == [1, 2]
    assert rows[2]["async/staleness_max"] == staleness
    assert all(math.isfinite(row["actor/loss"]) for row in rows.values())


def test_dynamic_sampling_past_staleness_zero_is_refused_in_one_line(make_config):
    from videorl.errors import ConfigError

    with pytest.raises(ConfigError, match=r"dynamic_sampling .*set rollout.max_staleness=0"):
        make_config("grpo", *DYNAMIC_SAMPLING, "rollout.mode=async", "rollout.max_staleness=1")


def test_two_trainer_ranks_each_drive_their_workers(build_config, tmp_path):
    """2 FSDP ranks (gloo), each with its own rollout worker for its shard of the prompts:
    staleness 0 equals the synchronous 2-rank run step for step."""
    from tests.trainer.test_distributed import TORCHRUN

    rows = {}
    for mode in ("sync", "async"):
        out = tmp_path / mode
        _, overrides = build_config(
            "grpo", out, "trainer.steps=2", f"rollout.mode={mode}", "rollout.max_staleness=0"
        )
        subprocess.run(
            [*TORCHRUN, str(WORKER), *overrides],
            check=True,
            env=_env(),
            timeout=900,
            capture_output=True,
        )
        rows[mode] = metrics_by_step(out)
    for step in (1, 2):
        assert _untimed(rows["sync"][step]) == _untimed(rows["async"][step]), f"step {step}"
