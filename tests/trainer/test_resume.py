"""Crash safety: kill -9 mid-run, resume, and see the same subsequent data order and end
with the same weights and optimizer state; bad media is skipped and counted; Ctrl-C saves a
checkpoint."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.trainer.pause import PausePoint
from tests.trainer.runs import assert_same_checkpoint, metrics_by_step
from tests.trainer.test_distributed import _env
from videorl.trainer.checkpoint import list_checkpoints
from videorl.trainer.loop import LoopHooks, run_training
from videorl.trainer.step import train_step

pytestmark = pytest.mark.slow  # multi-process or whole-run: `make test`, not `make test-fast`

WORKER = Path(__file__).with_name("loop_worker.py")


def _batches(metrics: Path) -> dict[int, list[str]]:
    out = {}
    for line in metrics.read_text().splitlines():
        row = json.loads(line)
        out[row["step"]] = row.get("batch_ids")
    return out


def _train_cmd(overrides: list[str], *extra: str) -> list[str]:
    return [sys.executable, str(WORKER), *overrides, *extra]


def test_kill_9_then_resume_sees_the_same_data_order(make_config, tmp_path):
    """SIGKILL while the run is held right after step 2's checkpoint (`pause.py`), then
    resume: the same batches, weights, optimizer, scheduler, sampler and RNG state as the
    uninterrupted run."""
    steps = ["trainer.steps=5", "trainer.save_every=1", "trainer.keep_last=10"]
    _, reference_overrides = make_config("orarl", *steps, output=tmp_path / "reference")
    subprocess.run(
        _train_cmd(reference_overrides), check=True, capture_output=True, timeout=600, env=_env()
    )
    reference = _batches(tmp_path / "reference" / "metrics.jsonl")

    out = tmp_path / "killed"
    _, overrides = make_config("orarl", *steps, output=out)
    point = PausePoint(tmp_path / "pause", step=2, ranks=1)
    proc = subprocess.Popen(
        _train_cmd(overrides),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**_env(), **point.env()},
    )
    point.wait(proc)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    survivors = list_checkpoints(out)
    assert [p.name for p in survivors] == ["step-000001", "step-000002"]
    for checkpoint in survivors:
        assert (checkpoint / "model" / "model.safetensors").is_file()
    subprocess.run(
        _train_cmd(overrides, "--resume", "auto"),
        check=True,
        capture_output=True,
        timeout=600,
        env=_env(),
    )
    resumed = _batches(out / "metrics.jsonl")
    for step in range(3, 6):
        assert resumed[step] == reference[step], (
            f"step {step}: {resumed[step]} != {reference[step]}"
        )
    assert (out / "final" / "model.safetensors").is_file()
    # and the same weights, optimizer, scheduler, sampler and RNG state, and learning rates
    assert_same_checkpoint(out / "step-000005", tmp_path / "reference" / "step-000005")
    expected, got = metrics_by_step(tmp_path / "reference"), metrics_by_step(out)
    assert [got[k]["lr"] for k in range(1, 6)] == [expected[k]["lr"] for k in range(1, 6)]


def test_corrupt_and_missing_videos_are_skipped_and_counted(make_config, tg_data, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(tg_data, data)
    rows = [json.loads(line) for line in (data / "train.jsonl").read_text().splitlines()]
    videos = [
        Path(r["video"]["path"])
        if Path(r["video"]["path"]).is_absolute()
        else data / r["video"]["path"]
        for r in rows
    ]
    videos[0].write_bytes(b"this is not an mp4 file at all" * 10)
    videos[1].unlink()
    config, _ = make_config(
        "orarl",
        "trainer.steps=4",
        f"data.train={data / 'train.jsonl'}",
        "data.prompts_per_step=4",
        output=tmp_path / "out",
    )
    run_training(config)
    metrics = [
        json.loads(line) for line in (tmp_path / "out" / "metrics.jsonl").read_text().splitlines()
    ]
    assert len(metrics) == 4
    # 8 records, 4 per step: 4 steps are 2 epochs, so each of the 2 bad videos is met twice
    bad = {rows[0]["id"], rows[1]["id"]}
    assert sum(m["data/skipped_media"] for m in metrics) == 4
    for m in metrics:  # every step keeps at least 2 good samples, so every step trains
        assert "actor/loss" in m and "step/skipped" not in m
        assert len(m["batch_ids"]) + m["data/skipped_media"] == 4
        assert not bad & set(m["batch_ids"])


def test_ctrl_c_saves_a_checkpoint(make_config, tmp_path):
    config, _ = make_config("grpo", "trainer.steps=5", output=tmp_path / "out")
    calls = {"n": 0}

    def interrupted_step(state, indices):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return train_step(state, indices)

    path = run_training(config, hooks=LoopHooks(step=interrupted_step))
    assert path.name == "step-000002"
    assert (path / "model" / "config.json").is_file()
