"""`videorl synth` writes a whole dataset or nothing, listed in its manifest, and never
overwrites files it did not write."""

from __future__ import annotations

import json

import pytest

from tests.cli_runner import run_cli

SMALL = ("--families", "tg", "--n", "2", "--seed", "1")


def _files(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def test_synth_refuses_a_folder_with_user_files(tmp_path, capsys, monkeypatch):
    (tmp_path / "train.jsonl").write_text("my records\n")
    result = run_cli(capsys, monkeypatch, "synth", "--out", tmp_path, *SMALL)
    assert result.code == 2 and len(result.lines) == 1, result.output
    assert "is not empty; pass --overwrite" in result.output
    assert _files(tmp_path) == ["train.jsonl"]
    assert (tmp_path / "train.jsonl").read_text() == "my records\n"


def test_overwrite_replaces_an_earlier_dataset_whole(tmp_path, capsys, monkeypatch):
    out = tmp_path / "data"
    first = run_cli(capsys, monkeypatch, "synth", "--out", out, *SMALL, "--val", "1")
    assert first.code == 0, first.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["files"] == _files(out)  # the manifest lists exactly what is there
    assert manifest["records"] == {"train": 2, "val": 1}
    again = run_cli(capsys, monkeypatch, "synth", "--out", out, *SMALL)
    assert again.code == 2 and "--overwrite" in again.output
    replaced = run_cli(capsys, monkeypatch, "synth", "--out", out, *SMALL, "--overwrite")
    assert replaced.code == 0, replaced.output
    assert not (out / "val.jsonl").exists()  # no stale validation set from the first run
    assert json.loads((out / "manifest.json").read_text())["files"] == _files(out)
    assert [p.name for p in tmp_path.iterdir()] == ["data"]


def test_overwrite_keeps_files_no_synth_wrote(tmp_path, capsys, monkeypatch):
    out = tmp_path / "data"
    assert run_cli(capsys, monkeypatch, "synth", "--out", out, *SMALL, "--val", "1").code == 0
    (out / "notes.md").write_text("mine")
    assert run_cli(capsys, monkeypatch, "synth", "--out", out, *SMALL, "--overwrite").code == 0
    assert (out / "notes.md").read_text() == "mine"
    assert not (out / "val.jsonl").exists()
    assert set(_files(out)) == {
        *json.loads((out / "manifest.json").read_text())["files"],
        "notes.md",
    }


def test_a_failure_midway_writes_nothing(tmp_path, capsys, monkeypatch):
    from videorl.data import synth

    real = synth.make_record
    calls = {"n": 0}

    def failing(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError("disk full")
        return real(*args, **kwargs)

    monkeypatch.setattr(synth, "make_record", failing)
    with pytest.raises(OSError, match="disk full"):
        synth.write_dataset(tmp_path / "data", ["tg"], n=2, val=0, seed=0)
    assert list(tmp_path.iterdir()) == []


def test_synth_writes_no_pooled_records_file(tmp_path, capsys, monkeypatch):
    """records.jsonl held train and validation together: training on it leaked val.jsonl."""
    out = tmp_path / "data"
    result = run_cli(capsys, monkeypatch, "synth", "--out", out, "--families", "tg,sg",
                     "--n", "2", "--val", "1")  # fmt: skip
    assert result.code == 0, result.output
    jsonl = sorted(p.name for p in out.glob("*.jsonl"))
    assert jsonl == ["train.jsonl", "val.jsonl"]


def test_synth_tg_grid_is_in_the_manifest_and_a_bad_grid_is_one_line(tmp_path, capsys, monkeypatch):
    out = tmp_path / "data"
    args = ("--families", "tg", "--tg-events", "appear", "--n", "2", "--seed", "0")
    assert run_cli(capsys, monkeypatch, "synth", "--out", out, *args, "--tg-grid", "1").code == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["tg_grid"] == 1.0
    bad = run_cli(capsys, monkeypatch, "synth", "--out", tmp_path / "b", *args, "--tg-grid", "2")
    assert bad.code != 0 and "--tg-grid 2" in bad.output and "Traceback" not in bad.output
