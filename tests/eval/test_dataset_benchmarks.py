"""`videorl eval --benchmark` reads the same sources as training: a folder of split files or
a Hugging Face dataset id (its test split unless `@split` says otherwise)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from videorl.cli import app

from .conftest import write_jsonl
from .test_runner import VTG_ANSWERS, VTG_ROWS


def _predictions(tmp_path):
    rows = [{"qid": k, "prediction": v} for k, v in VTG_ANSWERS.items()]
    return write_jsonl(tmp_path / "preds.jsonl", rows)


def _eval(*args: str):
    result = CliRunner().invoke(app, ["eval", *args])
    assert result.exit_code == 0, result.output
    return result


def test_benchmark_folder_uses_its_test_split(tmp_path):
    folder = tmp_path / "bench"
    folder.mkdir()
    write_jsonl(folder / "test.jsonl", VTG_ROWS)
    write_jsonl(folder / "train.jsonl", VTG_ROWS[:1])
    out = tmp_path / "out"
    _eval(
        "--predictions", str(_predictions(tmp_path)), "--benchmark", str(folder), "--out", str(out)
    )
    metrics = json.loads((out / "metrics.json").read_text())
    assert sum(metrics["counts"].values()) == len(VTG_ROWS)  # the test split, not train


def test_benchmark_hub_dataset_id(tmp_path, monkeypatch):
    datasets = pytest.importorskip("datasets")
    calls = []

    def fake_load_dataset(name, split=None, streaming=False):
        calls.append((name, split))
        return datasets.Dataset.from_list(VTG_ROWS)

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    predictions = str(_predictions(tmp_path))
    _eval("--predictions", predictions, "--benchmark", "org/vtg", "--out", str(tmp_path / "a"))
    counts = json.loads((tmp_path / "a" / "metrics.json").read_text())["counts"]
    assert counts["ok"] == 3
    _eval(
        "--predictions",
        predictions,
        "--benchmark",
        "hf://datasets/org/vtg@validation",
        "--out",
        str(tmp_path / "b"),
    )
    assert calls == [("org/vtg", "test"), ("org/vtg", "validation")]
