"""The CLI commands a user runs before and around training, called in-process: `make-tiny`,
`synth`, and `train --nproc N` (which hands over to torchrun)."""

from __future__ import annotations

import json
import os

from typer.testing import CliRunner

from videorl.cli import app
from videorl.data.loaders import load_records
from videorl.models.loading import load_model


def _invoke(*args: str):
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result


def test_make_tiny_writes_a_loadable_model(tmp_path):
    result = _invoke("make-tiny", str(tmp_path / "m"), "--seed", "2")
    assert "qwen2_5_vl (tiny" in result.output
    loaded = load_model(tmp_path / "m")
    assert loaded.is_vision
    again = tmp_path / "again"
    _invoke("make-tiny", str(again), "--seed", "2")
    a, b = loaded.model.state_dict(), load_model(again).model.state_dict()
    assert all(a[k].equal(b[k]) for k in a)  # same seed, same weights


def test_synth_writes_train_and_val_records_with_their_videos(tmp_path):
    _invoke("synth", "--out", str(tmp_path), "--families", "tg", "--n", "2", "--val", "1")
    train = load_records(tmp_path / "train.jsonl").records
    val = load_records(tmp_path / "val.jsonl").records
    assert len(train) == 2 and len(val) == 1
    assert not {r.id for r in train} & {r.id for r in val}
    for record in train + val:
        assert record.family.value == "temporal_grounding"
        assert (tmp_path / record.video.path).stat().st_size > 0  # absolute paths stay absolute


def test_train_nproc_hands_over_to_torchrun(monkeypatch, tmp_path):
    seen = {}

    def fake_execv(program, argv):
        seen["program"], seen["argv"] = program, argv
        raise SystemExit(0)

    monkeypatch.setattr(os, "execv", fake_execv)
    _invoke("train", "quickstart", "trainer.steps=3", "--nproc", "2", "--resume", "auto")
    argv = seen["argv"]
    assert os.path.basename(seen["program"]).startswith("torchrun")
    assert argv[1:] == [
        "--standalone",
        "--nproc-per-node=2",
        "-m",
        "videorl",
        "train",
        "quickstart",
        "trainer.steps=3",
        "trainer.nproc=2",
        "--resume",
        "auto",
    ]
    assert json.dumps(argv)  # plain strings only


def test_transformers_progress_bars_are_off_unless_verbose(tmp_path, monkeypatch):
    """`Writing model shards` / `Loading weights` bars landed in every command's output."""
    import subprocess
    import sys

    from videorl.cli import quiet_progress_bars

    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_DISABLE_PROGRESS_BARS"}
    command = [sys.executable, "-m", "videorl", "make-tiny", str(tmp_path / "m")]
    quiet = subprocess.run(command, env=env, check=True, capture_output=True, text=True)
    assert "wrote qwen2_5_vl" in quiet.stdout
    assert "Writing model shards" not in quiet.stdout + quiet.stderr
    monkeypatch.setattr(os, "environ", env)  # this process's environment stays as it was
    assert quiet_progress_bars(["eval", "--verbose", "--model", "m"]) == ["eval", "--model", "m"]
    assert os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "0"  # on, in child processes too
    del os.environ["HF_HUB_DISABLE_PROGRESS_BARS"]
    quiet_progress_bars(["eval"])
    assert os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "1"
