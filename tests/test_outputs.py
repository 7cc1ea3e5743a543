"""The output-folder guard: refuse non-empty targets and own inputs; stage, then rename."""

from __future__ import annotations

import pytest

from videorl.errors import ConfigError
from videorl.outputs import (
    refuse_nonempty,
    refuse_own_inputs,
    remove_stale_temporaries,
    stage_folder,
)


def _fill(tmp):
    (tmp / "weights.bin").write_text("new")


def test_stage_folder_refuses_a_folder_it_may_not_replace(tmp_path):
    final = tmp_path / "out"
    final.mkdir()
    (final / "user.txt").write_text("mine")
    with pytest.raises(ConfigError, match="is not empty; pass --overwrite"):
        stage_folder(final, _fill, replace=False)
    assert [p.name for p in tmp_path.iterdir()] == ["out"]
    assert (final / "user.txt").read_text() == "mine"
    stage_folder(final, _fill, replace=True)
    assert [p.name for p in final.iterdir()] == ["weights.bin"]
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_a_failed_fill_leaves_the_old_folder_and_no_temporary(tmp_path):
    final = tmp_path / "out"
    stage_folder(final, _fill, replace=False)

    def broken(tmp):
        (tmp / "half").write_text("x")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        stage_folder(final, broken, replace=True)
    assert (final / "weights.bin").read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_stale_temporaries_are_removed_and_a_half_swapped_folder_restored(tmp_path):
    (tmp_path / ".tmp-best-123").mkdir()
    (tmp_path / "metrics.jsonl.tmp").write_text("x")
    (tmp_path / ".old-final-77").mkdir()  # killed between the two renames: final is missing
    (tmp_path / ".old-final-77" / "model.safetensors").write_text("w")
    (tmp_path / ".old-best-9").mkdir()  # best/ itself is there: this one is the old copy
    (tmp_path / "best").mkdir()
    (tmp_path / "notes.txt").write_text("mine")
    remove_stale_temporaries(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["best", "final", "notes.txt"]
    assert (tmp_path / "final" / "model.safetensors").read_text() == "w"


def test_refusals_name_the_option_and_the_fix(tmp_path):
    (tmp_path / "a.txt").write_text("x")
    refuse_nonempty(tmp_path / "missing", overwrite=False)
    refuse_nonempty(tmp_path, overwrite=True)
    with pytest.raises(ConfigError, match=r"--out '.*' is not empty; pass --overwrite"):
        refuse_nonempty(tmp_path, overwrite=False)
    with pytest.raises(ConfigError, match="is a file, not a folder"):
        refuse_nonempty(tmp_path / "a.txt", overwrite=True)
    for out in (tmp_path, tmp_path / "a.txt", tmp_path.parent):
        with pytest.raises(ConfigError, match="overlaps its own input source 'x'"):
            refuse_own_inputs(out, [("source 'x'", tmp_path / "a.txt")], "--out")
    refuse_own_inputs(tmp_path / "other", [("source", tmp_path / "a.txt"), ("none", None)], "--out")


def test_make_tiny_and_score_never_overwrite_silently(tmp_path, capsys, monkeypatch):
    from tests.cli_runner import run_cli

    model = tmp_path / "my-model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    result = run_cli(capsys, monkeypatch, "make-tiny", model)
    assert result.code == 2 and "OUT" in result.output and "--overwrite" in result.output
    assert [p.name for p in model.iterdir()] == ["config.json"]

    records = tmp_path / "records.jsonl"
    records.write_text("")
    scores = tmp_path / "scores.jsonl"
    scores.write_text("mine\n")
    args = ("score", "--records", records, "--responses", records)
    result = run_cli(capsys, monkeypatch, *args, "--out", scores)
    assert result.code == 2 and "already exists; pass --overwrite" in result.output
    assert scores.read_text() == "mine\n"
    result = run_cli(capsys, monkeypatch, *args, "--out", records, "--overwrite")
    assert result.code == 2 and "overlaps its own input --records" in result.output
