"""`videorl eval --out` never mixes two evals nor writes over its own inputs."""

from __future__ import annotations

import json

from tests.cli_runner import run_cli

from .conftest import write_jsonl
from .test_runner import VTG_ANSWERS, VTG_ROWS


def test_eval_out_is_refused_when_taken_and_replaced_only_on_request(tmp_path, capsys, monkeypatch):
    benchmark = write_jsonl(tmp_path / "vtg.jsonl", VTG_ROWS)
    answers = write_jsonl(
        tmp_path / "a.jsonl", [{"id": k, "response": v} for k, v in VTG_ANSWERS.items()]
    )
    out = tmp_path / "eval"
    args = ("eval", "--predictions", answers, "--benchmark", benchmark, "--out", out)
    assert run_cli(capsys, monkeypatch, *args).code == 0
    (out / "notes.md").write_text("mine")
    before = (out / "metrics.json").read_text()

    refused = run_cli(capsys, monkeypatch, *args)
    assert refused.code == 2 and len(refused.lines) == 1, refused.output
    assert "is not empty; pass --overwrite" in refused.output and "--resume" in refused.output
    assert (out / "metrics.json").read_text() == before

    (out / "plots" / "stale.png").write_bytes(b"old")
    assert run_cli(capsys, monkeypatch, *args, "--overwrite").code == 0
    assert not (out / "plots" / "stale.png").exists()  # the earlier eval's outputs are gone
    assert (out / "notes.md").read_text() == "mine"
    rescored = ("eval", "--predictions", out / "predictions.jsonl", "--benchmark", benchmark)
    assert run_cli(capsys, monkeypatch, *rescored, "--out", out, "--overwrite").code == 0
    assert json.loads((out / "metrics.json").read_text())["counts"]


def test_eval_out_may_not_hold_the_benchmark_or_the_model(tmp_path, capsys, monkeypatch):
    benchmark = write_jsonl(tmp_path / "vtg.jsonl", VTG_ROWS)
    before = benchmark.read_bytes()
    answers = write_jsonl(tmp_path / "a.jsonl", [{"id": "1", "response": "1 to 2"}])
    for out, flags in ((tmp_path, ("--overwrite",)), (tmp_path / "vtg.jsonl", ())):
        result = run_cli(
            capsys, monkeypatch, "eval", "--predictions", answers, "--benchmark", benchmark,
            "--out", out, *flags,
        )  # fmt: skip
        assert result.code == 2 and "overlaps its own input --benchmark" in result.output
    assert benchmark.read_bytes() == before
    model = tmp_path / "run" / "final"
    model.mkdir(parents=True)
    result = run_cli(
        capsys, monkeypatch, "eval", "--model", model, "--benchmark", benchmark,
        "--out", model / "eval",
    )  # fmt: skip
    assert result.code == 2 and "overlaps its own input --model" in result.output
    assert list(model.iterdir()) == []


def test_resume_keeps_the_predictions_of_an_interrupted_eval(tmp_path):
    import pytest

    from videorl.errors import ConfigError
    from videorl.eval.out_dir import claim_out_dir

    out = tmp_path / "eval"
    (out / "plots").mkdir(parents=True)
    (out / "predictions.jsonl").write_text('{"id": "1", "response": "1 to 2"}\n')
    claim_out_dir(out, overwrite=False, resume=True)
    assert (out / "predictions.jsonl").is_file() and (out / "plots").is_dir()
    with pytest.raises(ConfigError, match="one of --resume"):
        claim_out_dir(out, overwrite=True, resume=True)
    claim_out_dir(out, overwrite=True, resume=False)
    assert list(out.iterdir()) == []
