"""`videorl eval --endpoint` against `videorl serve` scores what in-process eval scores."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from videorl.cli import app

from .conftest import start_server

VIDEO_FLAGS = ["--fps", "2", "--max-frames", "4", "--min-pixels", "784", "--max-pixels", "3136"]


def predictions(folder):
    rows = [json.loads(line) for line in (folder / "predictions.jsonl").read_text().splitlines()]
    return {row["id"]: row["response"] for row in rows}


@pytest.mark.slow
def test_eval_endpoint_equals_in_process_eval(loaded, media_root, tiny_model_dir, tmp_path):
    from videorl.data.synth import synthesize

    benchmark = str(synthesize(tmp_path / "bench", ["tg", "math"], n=3, seed=3))
    runner = CliRunner()
    local = runner.invoke(
        app,
        [
            "eval",
            "--model",
            tiny_model_dir("qwen2_5_vl"),
            "--benchmark",
            benchmark,
            "--out",
            str(tmp_path / "local"),
            "--max-new-tokens",
            "8",
            *VIDEO_FLAGS,
        ],
    )
    assert local.exit_code == 0, local.output
    handle, queue = start_server(loaded, media_root)
    with handle:
        remote = runner.invoke(
            app,
            [
                "eval",
                "--endpoint",
                handle.url,
                "--served-model",
                "tiny",
                "--benchmark",
                benchmark,
                "--out",
                str(tmp_path / "remote"),
                "--max-new-tokens",
                "8",
                *VIDEO_FLAGS,
            ],
        )
    queue.close()
    assert remote.exit_code == 0, remote.output
    assert predictions(tmp_path / "remote") == predictions(tmp_path / "local")
    local_metrics = json.loads((tmp_path / "local" / "metrics.json").read_text())
    remote_metrics = json.loads((tmp_path / "remote" / "metrics.json").read_text())
    assert remote_metrics["families"] == local_metrics["families"]
