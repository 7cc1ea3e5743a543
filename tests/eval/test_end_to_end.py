"""`videorl eval` from the command line: a tiny model on a synthetic benchmark of every
family, scoring existing predictions, and comparing two runs."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from videorl.cli import app

from .conftest import write_jsonl
from .test_runner import VTG_ANSWERS, VTG_ROWS

PNG = b"\x89PNG\r\n\x1a\n"


def _invoke(*args: str):
    result = CliRunner().invoke(app, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert result.exit_code == 0, result.output
    return result


@pytest.mark.slow
def test_tiny_model_eval_writes_predictions_metrics_report_and_plots(
    tiny_model_dir, synth_all, tmp_path
):
    out = tmp_path / "eval"
    _invoke(
        "eval",
        "--model",
        tiny_model_dir(),
        "--benchmark",
        str(synth_all),
        "--out",
        str(out),
        "--max-new-tokens",
        "6",
        "--max-frames",
        "4",
        "--max-pixels",
        str(4 * 28 * 28),
        "--batch-size",
        "4",
    )
    records = [json.loads(line) for line in synth_all.read_text().splitlines()]
    predictions = [
        json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()
    ]
    assert sorted(p["id"] for p in predictions) == sorted(r["id"] for r in records)
    assert all(isinstance(p["response"], str) for p in predictions)
    metrics = json.loads((out / "metrics.json").read_text())
    assert set(metrics["families"]) == {r["family"] for r in records}
    assert metrics["source"]["think"] is False
    report = (out / "report.md").read_text()
    links = re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", report)
    assert sorted(links) == [
        "plots/iou_histogram.png",
        "plots/recall_curve.png",
        "plots/tg_timelines.png",
    ]
    for link in links:
        assert (out / link).read_bytes().startswith(PNG)
    assert "## Worst cases" in report and "## Metrics" in report


def test_cli_scores_predictions_and_compares(tmp_path):
    benchmark = write_jsonl(tmp_path / "vtg.jsonl", VTG_ROWS)
    answers = write_jsonl(
        tmp_path / "a.jsonl", [{"id": k, "response": v} for k, v in VTG_ANSWERS.items()]
    )
    _invoke(
        "eval",
        "--predictions",
        str(answers),
        "--benchmark",
        str(benchmark),
        "--out",
        str(tmp_path / "a"),
    )
    metrics = json.loads((tmp_path / "a" / "metrics.json").read_text())
    assert metrics["families"]["temporal_grounding"]["metrics"]["R1@0.5"] == 75.0
    better = write_jsonl(
        tmp_path / "b.jsonl",
        [{"id": k, "response": "1 to 2" if k == "3" else v} for k, v in VTG_ANSWERS.items()],
    )
    _invoke(
        "eval",
        "--predictions",
        str(better),
        "--benchmark",
        str(benchmark),
        "--out",
        str(tmp_path / "b"),
    )
    result = _invoke(
        "eval",
        "--compare",
        str(tmp_path / "a"),
        str(tmp_path / "b"),
        "--out",
        str(tmp_path / "cmp"),
    )
    table = (tmp_path / "cmp" / "compare.md").read_text()
    assert "| temporal_grounding | R1@0.7 | 25.0 | 50.0 | +25.0 |" in table
    assert "B higher 1, A higher 0, equal 3" in table
    assert "R1@0.7" in result.output


def test_cli_needs_exactly_one_mode(tmp_path):
    from videorl.errors import ConfigError

    with pytest.raises(ConfigError, match="exactly one of --model"):
        _invoke("eval", "--benchmark", "x.jsonl")
    with pytest.raises(ConfigError, match="--served-model"):
        _invoke(
            "eval",
            "--endpoint",
            "http://127.0.0.1:9/v1",
            "--benchmark",
            str(write_jsonl(tmp_path / "v.jsonl", VTG_ROWS)),
        )
