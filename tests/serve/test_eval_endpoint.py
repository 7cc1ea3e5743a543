"""`videorl eval --endpoint` against `videorl serve` scores what in-process eval scores."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from videorl.cli import app

from .conftest import start_server

VIDEO_FLAGS = ["--fps", "2", "--max-frames", "4", "--min-pixels", "784", "--max-pixels", "3136"]


def endpoint_args(url, benchmark, out, max_new_tokens):
    """`videorl eval --endpoint` against the tiny served model, with the test's video flags."""
    return ["eval", "--endpoint", url, "--served-model", "tiny", "--benchmark", benchmark] + [
        "--out",
        str(out),
        "--max-new-tokens",
        str(max_new_tokens),
        *VIDEO_FLAGS,
    ]


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
        remote = runner.invoke(app, endpoint_args(handle.url, benchmark, tmp_path / "remote", 8))
    queue.close()
    assert remote.exit_code == 0, remote.output
    assert predictions(tmp_path / "remote") == predictions(tmp_path / "local")
    local_metrics = json.loads((tmp_path / "local" / "metrics.json").read_text())
    remote_metrics = json.loads((tmp_path / "remote" / "metrics.json").read_text())
    assert remote_metrics["families"] == local_metrics["families"]


def frames_written(folder):
    """record id -> the coordinate frame written next to its prediction (None: none)."""
    rows = [json.loads(line) for line in (folder / "predictions.jsonl").read_text().splitlines()]
    return {row["id"]: (row.get("frame") or {}).get("box_format") for row in rows}


def test_eval_endpoint_converts_boxes_to_the_served_family(
    loaded, media_root, tiny_model_dir, tmp_path
):
    """`--model-type` (or `--checkpoint`'s type) puts the records' boxes in the served model
    family's convention, as `--model` does; without either they stay in the records' own."""
    from videorl.data.synth import synthesize

    benchmark = str(synthesize(tmp_path / "bench", ["sg", "trk"], n=1, seed=4))
    runner = CliRunner()
    handle, queue = start_server(loaded, media_root)

    def endpoint_eval(name, *flags):
        args = endpoint_args(handle.url, benchmark, tmp_path / name, 4)
        result = runner.invoke(app, [*args, *flags])
        assert result.exit_code == 0, result.output
        return set(frames_written(tmp_path / name).values())

    with handle:
        assert endpoint_eval("qwen3", "--model-type", "qwen3_vl") == {"norm1000"}
        assert endpoint_eval("ckpt", "--checkpoint", tiny_model_dir("qwen2_5_vl")) == {"abs"}
        assert endpoint_eval("none") == {None}
    queue.close()


def test_endpoint_only_flags_are_checked_in_one_line(tmp_path):
    runner = CliRunner()
    bench = str(tmp_path / "b.jsonl")
    wrong_type = ["--served-model", "m", "--model-type", "qwen3vl", "--benchmark", bench]
    result = runner.invoke(app, ["eval", "--endpoint", "http://127.0.0.1:9/v1", *wrong_type])
    assert result.exit_code != 0 and "--model-type='qwen3vl'" in str(result.exception)
    result = runner.invoke(app, ["eval", "--predictions", bench, "--model-type", "qwen3_vl"])
    assert result.exit_code != 0
    assert "--model-type describe the model behind --endpoint" in str(result.exception)
