"""`videorl eval` as a newcomer types it: what its messages recommend, it accepts."""

from __future__ import annotations

import json

from tests.cli_runner import run_cli

from .conftest import write_jsonl
from .test_runner import VTG_ANSWERS, VTG_ROWS


def test_a_bad_benchmark_line_names_skip_invalid_and_eval_accepts_it(tmp_path, capsys, monkeypatch):
    """The error for an invalid row recommends `--skip-invalid` (not a training config key
    eval rejects); with the flag the row is skipped, counted, and the rest scored."""
    benchmark = write_jsonl(tmp_path / "vtg.jsonl", VTG_ROWS)
    with benchmark.open("a") as f:
        f.write("{not json\n")
    answers = write_jsonl(
        tmp_path / "a.jsonl", [{"id": k, "response": v} for k, v in VTG_ANSWERS.items()]
    )
    args = ("eval", "--predictions", answers, "--benchmark", benchmark)
    refused = run_cli(capsys, monkeypatch, *args, "--out", tmp_path / "a")
    assert refused.code == 2 and len(refused.lines) == 1
    assert refused.lines[0].endswith("; fix the row or pass --skip-invalid")
    done = run_cli(capsys, monkeypatch, *args, "--out", tmp_path / "b", "--skip-invalid")
    assert done.code == 0, done.output
    metrics = json.loads((tmp_path / "b" / "metrics.json").read_text())
    assert metrics["benchmark"]["skipped_invalid_rows"] == 1
    assert metrics["families"]["temporal_grounding"]["n"] == len(VTG_ROWS)
