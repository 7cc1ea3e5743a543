"""Data parallelism at the loop level (2 CPU ranks, gloo): a whole `run_training` on 2 ranks
equals one process on the same global batches, each rank trains on its own prompts, and a
2-rank run killed with SIGKILL, then stopped with Ctrl-C, resumes to exactly the
uninterrupted 2-rank run. Rollouts are seeded per prompt (`loop_worker.py`), so that they do
not depend on which rank samples them. Signals are sent while the run is held at a known
point (`pause.py`), never after a guessed delay."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from tests.trainer.loop_worker import seeded_generate
from tests.trainer.pause import PausePoint
from tests.trainer.runs import assert_same_checkpoint, metrics_by_step
from tests.trainer.test_distributed import TORCHRUN, _env
from videorl.models.loading import load_model
from videorl.rollout.engine import HFEngine
from videorl.trainer.checkpoint import list_checkpoints
from videorl.trainer.loop import run_training

pytestmark = pytest.mark.slow  # multi-process or whole-run: `make test`, not `make test-fast`

WORKER = Path(__file__).with_name("loop_worker.py")
STEPS = 4
RUN = [
    f"trainer.steps={STEPS}",
    "trainer.save_every=1",
    "trainer.keep_last=10",
    "optim.lr=1e-3",  # Adam turns fp32 summation-order noise into ~lr-sized steps
    "optim.warmup_steps=1",
    "optim.schedule=cosine",
]


def _command(overrides: list[str], ranks: int, *extra: str) -> list[str]:
    launcher = TORCHRUN if ranks == 2 else [sys.executable]
    return [*launcher, str(WORKER), *overrides, *extra]


def _run(overrides: list[str], ranks: int, *extra: str) -> None:
    subprocess.run(
        _command(overrides, ranks, *extra), check=True, env=_env(), timeout=900, capture_output=True
    )


@pytest.fixture(scope="module")
def runs(build_config, tmp_path_factory):
    root = tmp_path_factory.mktemp("dist_loop")
    out = {ranks: root / f"ranks{ranks}" for ranks in (1, 2)}
    _run(build_config("grpo", out[2], *RUN)[1], 2)
    with pytest.MonkeyPatch.context() as m:  # the one-process run needs no subprocess
        m.setattr(HFEngine, "generate", seeded_generate)
        run_training(build_config("grpo", out[1], *RUN)[0])
    return out, build_config


def test_two_ranks_equal_one_process_over_a_whole_run(runs):
    out, _ = runs
    one, two = metrics_by_step(out[1]), metrics_by_step(out[2])
    assert sorted(one) == sorted(two) == list(range(1, STEPS + 1))
    for step in one:
        ids = two[step]["batch_ids"]  # rank 0's prompts, then rank 1's
        assert len(ids) == len(set(ids)) == 2, f"step {step}: ranks share prompts {ids}"
        assert ids == one[step]["batch_ids"], f"step {step}: {ids} != {one[step]['batch_ids']}"
        assert two[step]["lr"] == one[step]["lr"]
    single = load_file(out[1] / "final" / "model.safetensors")
    double = load_file(out[2] / "final" / "model.safetensors")
    for key, value in single.items():
        torch.testing.assert_close(double[key], value, atol=1e-5, rtol=0, msg=key)
    model_path = runs[1]("grpo", out[1], *RUN)[0].model.path
    initial = load_model(model_path).model.state_dict()
    assert any(not torch.equal(initial[k], single[k]) for k in single), "nothing trained"


def _saved_steps(out: Path) -> list[int]:
    return [int(p.name.split("-")[1]) for p in list_checkpoints(out)]


def test_two_ranks_killed_then_interrupted_resume_to_the_uninterrupted_run(runs):
    """SIGKILL to the launcher and both workers while they are held after step 1's
    checkpoint, resume; Ctrl-C (SIGINT to the launcher's process group, as a terminal sends
    it; the agent forwards it to the workers) while they are held after step 2's, resume:
    every checkpoint equals the uninterrupted 2-rank run's."""
    out, build_config = runs
    run = out[2].parent / "interrupted"
    overrides = build_config("grpo", run, *RUN)[1]

    def start(point: PausePoint, *extra: str) -> subprocess.Popen:
        return subprocess.Popen(
            _command(overrides, 2, *extra),
            env={**_env(), **point.env()},
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    point = PausePoint(run.parent / "pause-kill", step=1, ranks=2)
    proc = start(point)
    point.wait(proc)
    point.kill_all(proc)
    assert _saved_steps(run) == [1]

    point = PausePoint(run.parent / "pause-int", step=2, ranks=2)
    proc = start(point, "--resume", "auto")
    point.wait(proc)
    os.killpg(proc.pid, signal.SIGINT)
    point.wait_interrupted(proc)
    point.release()
    proc.wait(timeout=300)
    assert _saved_steps(run) == [1, 2] and not (run / "final").exists(), "Ctrl-C: no stop at 2"
    for step in (1, 2):
        assert_same_checkpoint(run / f"step-{step:06d}", out[2] / f"step-{step:06d}")

    _run(overrides, 2, "--resume", "auto")
    got, expected = metrics_by_step(run), metrics_by_step(out[2])
    for step in range(1, STEPS + 1):
        assert got[step]["batch_ids"] == expected[step]["batch_ids"], f"step {step}"
        assert got[step]["lr"] == expected[step]["lr"], f"step {step}"
    for step in range(3, STEPS + 1):
        assert_same_checkpoint(run / f"step-{step:06d}", out[2] / f"step-{step:06d}")


def test_two_ranks_draw_in_lockstep_with_refills_and_shuffled_rollouts(build_config, tmp_path):
    """DAPO dynamic sampling and T-GRPO on 2 ranks: half the records have flat rewards
    (`flat_reward.py`), so the ranks run short at different draws; they agree on every
    refill (`all_reduce(max)`), so each step's draw count is the same on both (its mean over
    ranks is a whole number), the run finishes, and the shuffled rollouts run every draw."""
    out = tmp_path / "lockstep"
    extra = [  # GRPO on the bare recipe ("orarl" adds no reward plug-in of its own)
        "algorithm.estimator=grpo",
        "algorithm.annotation_rows=false",
        "algorithm.pruning.enabled=false",
        "trainer.steps=3",
        "trainer.save_every=0",
        "algorithm.temporal_contrast.enabled=true",
        "algorithm.temporal_contrast.n_shuffled=2",
        "algorithm.dynamic_sampling.enabled=true",
        "algorithm.dynamic_sampling.metric=task",
        "algorithm.dynamic_sampling.max_draws=4",
        "algorithm.dynamic_sampling.on_cap=train",
        "reward.plugins={temporal_grounding: 'tests.trainer.flat_reward:reward'}",
    ]
    _run(build_config("orarl", out, *extra)[1], 2)
    rows = metrics_by_step(out)
    assert sorted(rows) == [1, 2, 3]
    draws = [rows[s]["dynamic_sampling/draws"] for s in rows]
    assert all(d == int(d) and d >= 1 for d in draws), f"ranks drew differently: {draws}"
    assert max(draws) > 1, f"no step refilled: {draws}"
    assert all("tgrpo/shuffled_acc" in rows[s] or rows[s].get("step/skipped") for s in rows)


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _two_nodes(overrides: list[str], *extra: str) -> None:
    """`torchrun --nnodes 2 --nproc-per-node 1` twice on this machine, c10d rendezvous on
    127.0.0.1: two "nodes" of one rank each (global ranks 0 and 1, local rank 0 on both)."""
    port = _free_port()
    launcher = [sys.executable, "-m", "torch.distributed.run", "--nnodes=2", "--nproc-per-node=1"]
    rendezvous = ["--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{port}", "--rdzv-id=t"]
    nodes = [
        subprocess.Popen(
            [*launcher, *rendezvous, f"--node-rank={rank}", str(WORKER), *overrides, *extra],
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        for rank in (0, 1)
    ]
    for node in nodes:
        output, _ = node.communicate(timeout=900)
        assert node.returncode == 0, output.decode()[-3000:]


def test_two_nodes_equal_one_process_and_resume_on_one(runs, tmp_path):
    """2 nodes x 1 rank equal 1 process (same batches, rates, weights to 1e-5); rank 0
    alone writes the run files (one metrics row per step, one state.pt) while each rank
    writes its shard and RNG state; the 2-node checkpoint of step 2 resumes on 1 process
    to the same end."""
    out, build_config = runs
    nodes = tmp_path / "nodes2"
    _two_nodes(build_config("grpo", nodes, *RUN)[1])
    one, two = metrics_by_step(out[1]), metrics_by_step(nodes)
    rows = (nodes / "metrics.jsonl").read_text().splitlines()
    assert len(rows) == STEPS and sorted(two) == list(range(1, STEPS + 1))
    for step in one:
        assert (
            two[step]["batch_ids"] == one[step]["batch_ids"] and two[step]["lr"] == one[step]["lr"]
        )
    single = load_file(out[1] / "final" / "model.safetensors")
    double = load_file(nodes / "final" / "model.safetensors")
    for key, value in single.items():
        torch.testing.assert_close(double[key], value, atol=1e-5, rtol=0, msg=key)
    checkpoint = nodes / "step-000002"
    assert sorted(p.name for p in checkpoint.glob("rng-*.pt")) == ["rng-0.pt", "rng-1.pt"]
    assert [p.name for p in checkpoint.glob("state*.pt")] == ["state.pt"]

    resumed = tmp_path / "resumed"
    resumed.mkdir()
    shutil.copytree(checkpoint, resumed / "step-000002")
    _run(build_config("grpo", resumed, *RUN)[1], 1, "--resume", "auto")
    again = load_file(resumed / "final" / "model.safetensors")
    for key, value in double.items():
        torch.testing.assert_close(again[key], value, atol=1e-5, rtol=0, msg=key)
