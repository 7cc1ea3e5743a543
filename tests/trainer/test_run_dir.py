"""Output folders are never silently reused: a second run into a run folder is refused,
`--overwrite` replaces only the run's files, a resume logs each step once and removes stale
temporaries, and `videorl merge` never deletes its output or its own input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.cli_runner import run_cli
from tests.trainer.conftest import SMALL
from videorl.api import resolve_config_path
from videorl.config import load_config
from videorl.trainer.checkpoint import list_checkpoints
from videorl.trainer.loop import run_training

STEPS = ["trainer.steps=2", "trainer.save_every=1", "trainer.keep_last=10"]


@pytest.fixture(scope="module")
def run(tiny_model_dir, tg_data, tmp_path_factory):
    """A finished 2-step GRPO run with a checkpoint per step; returns (folder, overrides)."""
    out = tmp_path_factory.mktemp("run") / "run"
    overrides = [
        f"model.path={tiny_model_dir('qwen2_5_vl')}",
        f"data.train={tg_data / 'train.jsonl'}",
        "data.val=null",
        f"trainer.output_dir={out}",
        *SMALL,
        "algorithm.estimator=grpo",
        "algorithm.annotation_rows=false",
        "algorithm.pruning.enabled=false",
        "reward.plugins={temporal_grounding: 'tests.trainer.length_reward:reward'}",
        *STEPS,
    ]
    run_training(load_config(resolve_config_path("quickstart"), overrides))
    return out, overrides


def _steps(path: Path) -> list[int]:
    return [json.loads(line)["step"] for line in path.read_text().splitlines()]


def _tree(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_size for p in sorted(folder.rglob("*"))}


def test_second_run_into_a_run_folder_is_refused_with_one_line(run, capsys, monkeypatch):
    out, overrides = run
    before = _tree(out)
    result = run_cli(capsys, monkeypatch, "train", "quickstart", *overrides)
    assert result.code == 2, result.output
    assert len(result.lines) == 1, result.output
    assert "holds another training run" in result.output
    for fix in ("--resume auto", "--overwrite", "trainer.output_dir"):
        assert fix in result.output
    assert _tree(out) == before  # nothing written, nothing removed


def test_a_folder_of_other_files_is_refused_too(run, tmp_path, capsys, monkeypatch):
    _, overrides = run
    (tmp_path / "train.jsonl").write_text("{}\n")
    moved = [o for o in overrides if not o.startswith("trainer.output_dir=")]
    result = run_cli(
        capsys, monkeypatch, "train", "quickstart", *moved, f"trainer.output_dir={tmp_path}"
    )
    assert result.code == 2 and "holds files that are not a run" in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.jsonl"]


def test_resuming_a_checkpoint_past_trainer_steps_is_refused(run, capsys, monkeypatch):
    out, overrides = run
    before = _tree(out)
    result = run_cli(
        capsys,
        monkeypatch,
        "train",
        "quickstart",
        *overrides,
        "trainer.steps=1",
        "--resume",
        "auto",
    )
    assert result.code == 2 and len(result.lines) == 1, result.output
    assert "is at step 2, past trainer.steps=1" in result.output
    assert _tree(out) == before


def test_resume_logs_each_step_once_and_removes_stale_temporaries(run):
    out, overrides = run
    # A kill after step 2 was logged but before it was saved, plus leftovers of other kills.
    for gone in (out / "step-000002", out / "final"):
        shutil.rmtree(gone)
    with (out / "metrics.jsonl").open("a") as f:
        f.write('{"step": 3, "reward/me')  # a line cut mid-write
    (out / ".tmp-best-12345").mkdir()
    (out / ".tmp-step-000003").mkdir()
    (out / "config.yaml.tmp").write_text("half")
    assert _steps(out / "samples.jsonl") == [1, 2]

    run_training(load_config(resolve_config_path("quickstart"), overrides), resume="auto")
    assert _steps(out / "metrics.jsonl") == [1, 2]
    assert _steps(out / "samples.jsonl") == [1, 2]
    assert not [p.name for p in out.iterdir() if p.name.startswith(".") or p.suffix == ".tmp"]
    assert [p.name for p in list_checkpoints(out)] == ["step-000001", "step-000002"]
    assert (out / "final" / "model.safetensors").is_file()


def test_overwrite_never_deletes_the_model_it_trains(run, capsys, monkeypatch):
    out, overrides = run
    before = _tree(out)
    again = [*overrides, f"model.path={out / 'final'}"]
    result = run_cli(capsys, monkeypatch, "train", "quickstart", *again, "--overwrite")
    assert result.code == 2 and len(result.lines) == 1, result.output
    assert "overlaps model.path" in result.output and "--overwrite would delete" in result.output
    inside = [
        *overrides,
        f"trainer.output_dir={out / 'final' / 'run2'}",
        f"model.path={out / 'final'}",
    ]
    result = run_cli(capsys, monkeypatch, "train", "quickstart", *inside)
    assert result.code == 2 and "overlaps model.path" in result.output
    assert _tree(out) == before


def test_overwrite_replaces_the_run_and_keeps_other_files(run, capsys, monkeypatch):
    out, overrides = run
    (out / "notes.txt").write_text("mine")
    one_step = [*overrides, "trainer.steps=1", "trainer.save_every=0"]
    result = run_cli(capsys, monkeypatch, "train", "quickstart", *one_step, "--overwrite")
    assert result.code == 0, result.output
    assert _steps(out / "metrics.jsonl") == [1]
    assert [p.name for p in list_checkpoints(out)] == ["step-000001"]
    assert (out / "notes.txt").read_text() == "mine"


def test_merge_refuses_its_own_run_folder_and_a_non_empty_out(run, tmp_path, capsys, monkeypatch):
    out, _ = run
    checkpoint = list_checkpoints(out)[-1]
    before = _tree(out)
    for target, flags in ((out, ()), (out, ("--overwrite",)), (checkpoint / "model", ())):
        result = run_cli(capsys, monkeypatch, "merge", checkpoint, target, *flags)
        assert result.code == 2 and len(result.lines) == 1, result.output
        assert "overlaps its own input checkpoint" in result.output
    assert _tree(out) == before

    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "keep.txt").write_text("mine")
    result = run_cli(capsys, monkeypatch, "merge", checkpoint, taken)
    assert result.code == 2 and "is not empty; pass --overwrite" in result.output
    assert (taken / "keep.txt").read_text() == "mine"

    result = run_cli(capsys, monkeypatch, "merge", checkpoint, taken, "--overwrite")
    assert result.code == 0, result.output
    assert (taken / "model.safetensors").is_file() and not (taken / "keep.txt").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
