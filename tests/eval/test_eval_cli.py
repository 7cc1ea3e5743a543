"""`videorl eval` as a newcomer types it: what its messages recommend, it accepts."""

from __future__ import annotations

import json
import re

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


def _no_hub(monkeypatch):
    """Any Hub lookup fails the test (the newcomer waited 31 s on five retries)."""
    import transformers.utils

    def refuse(*args, **kwargs):
        raise AssertionError(f"a Hub lookup for {args}")

    monkeypatch.setattr(transformers.utils, "cached_file", refuse)


def test_a_mistyped_local_model_path_fails_at_once_without_the_hub(tmp_path, capsys, monkeypatch):
    """`eval --model runs/nope` where runs/ exists: a local path, checked on disk at once."""
    _no_hub(monkeypatch)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    benchmark = write_jsonl(tmp_path / "vtg.jsonl", VTG_ROWS)
    for typed in ("runs/nope", "./runs/nope"):
        result = run_cli(capsys, monkeypatch, "eval", "--model", typed, "--benchmark", benchmark)
        assert result.code == 2
        assert result.lines == [
            f"error: --model {typed!r} does not exist; fix the path (a Hub id is org/name)"
        ]
    assert not (tmp_path / "runs" / "eval").exists()  # refused before claiming --out


def test_the_quickstart_models_missing_name_the_command_that_makes_them(
    tmp_path, capsys, monkeypatch
):
    _no_hub(monkeypatch)
    monkeypatch.chdir(tmp_path)
    benchmark = write_jsonl(tmp_path / "vtg.jsonl", VTG_ROWS)
    model = "runs/quickstart/sft/final"
    result = run_cli(capsys, monkeypatch, "eval", "--model", model, "--benchmark", benchmark)
    assert result.code == 2
    assert result.lines == [
        (
            f"error: --model {model!r} does not exist; run `videorl sft sft_quickstart` first (it "
            "writes runs/quickstart/sft; `videorl quickstart` runs every step)"
        )
    ]


def test_gibberish_inside_answer_counts_as_unparsed(tmp_path, capsys, monkeypatch):
    """Replacement characters and stray `>` around a `1` are not the window (1, 1)."""
    benchmark = write_jsonl(tmp_path / "vtg.jsonl", VTG_ROWS)
    garbage = ["<answer>\ufffd\ufffd>1\ufffd>1</answer>", "<answer>>1 >\ufffd1></answer>"]
    answers = write_jsonl(
        tmp_path / "a.jsonl",
        [{"id": k, "response": garbage[i % 2]} for i, k in enumerate(VTG_ANSWERS)],
    )
    out = tmp_path / "a"
    args = ("eval", "--predictions", answers, "--benchmark", benchmark, "--out", out)
    result = run_cli(capsys, monkeypatch, *args)
    assert result.code == 0, result.output
    assert f"records: unparsed {len(VTG_ROWS)}" in result.output
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert [s["status"] for s in samples] == ["unparsed"] * len(VTG_ROWS)
    assert not any("prediction" in s for s in samples)


def test_compare_of_two_evals_loads_no_model_stack(tmp_path):
    """`eval --compare A B` reads two metrics.json files: no torch, no models, no videos."""
    import subprocess
    import sys

    for side, miou in (("a", 10.0), ("b", 20.0)):
        (tmp_path / side).mkdir()
        metrics = {"families": {"temporal_grounding": {"n": 4, "metrics": {"mIoU": miou}}}}
        (tmp_path / side / "metrics.json").write_text(json.dumps(metrics))
    argv = ["videorl", "eval", "--compare", str(tmp_path / "a"), str(tmp_path / "b")]
    script = (
        f"import sys\nfrom videorl.cli import main\nsys.argv = {argv!r}\n"
        "try:\n    main()\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
        "print('torch' in sys.modules, 'transformers' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], check=True, capture_output=True, text=True
    )
    assert "+10.0" in done.stdout
    assert done.stdout.splitlines()[-1] == "False False"


def test_eval_messages_name_evals_flags_not_training_keys(tmp_path, capsys, monkeypatch):
    """The data and video messages that recommend a training key (`errors.fix`) recommend
    eval's flag or its wording instead when eval prints them."""
    monkeypatch.chdir(tmp_path)
    answers = write_jsonl(tmp_path / "a.jsonl", [{"id": "r1", "response": "x"}])
    no_family = write_jsonl(
        tmp_path / "rows.jsonl", [{"id": "r1", "problem": "q", "answer": "a", "video": "v.mp4"}]
    )
    folder = tmp_path / "bench"
    folder.mkdir()
    write_jsonl(folder / "train.jsonl", VTG_ROWS)
    unknown = write_jsonl(tmp_path / "unknown.jsonl", [{"id": "r1", "text": "q"}])
    cases = {
        (
            "--benchmark",
            no_family,
        ): "give each row a problem_type field (e.g. temporal_grounding)",
        ("--benchmark", folder): "name the split in --benchmark (org/name@SPLIT) or give a file",
        ("--benchmark", unknown): "; write the rows in one of the formats records, vtg,",
        ("--benchmark", no_family, "--fps", "0"): "error: --fps=0.0 is invalid: must be a positive",
    }
    for extra, words in cases.items():
        args = ("eval", "--predictions", answers, *extra, "--out", tmp_path / "out")
        result = run_cli(capsys, monkeypatch, *args)
        assert result.code == 2 and len(result.lines) == 1, result.output
        line = result.lines[0]
        assert words in line and not re.search(r"(?<![/\w])data\.[a-z]", line), line


def test_every_training_fix_has_an_eval_spelling_that_eval_accepts():
    """Each `fix('...')` in the package has an `EVAL_FIXES` entry, and every flag an entry
    names is one of `videorl eval`'s options; outside eval the training words stay."""
    import ast
    import typing
    from pathlib import Path

    import videorl
    from videorl.cli.evaluate import eval_command
    from videorl.errors import fix, spelled_fixes
    from videorl.eval.commands import EVAL_FIXES

    used = set()
    for path in Path(videorl.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "fix":
                (argument,) = node.args
                if isinstance(argument, ast.Constant):
                    used.add(argument.value)
                else:  # f"video.{key}": the config's video keys
                    used.update(k for k in EVAL_FIXES if k.startswith("video."))
    assert used - set(EVAL_FIXES) == set()
    flags: set[str] = set()
    for hint in typing.get_type_hints(eval_command, include_extras=True).values():
        for meta in getattr(hint, "__metadata__", ()):
            names = [getattr(meta, "default", None), *(getattr(meta, "param_decls", ()) or ())]
            flags.update(n.split("/")[0] for n in names if isinstance(n, str))
    for words in EVAL_FIXES.values():
        assert set(re.findall(r"--[a-z-]+", words)) <= flags, words
    assert fix("set data.video_root") == "set data.video_root"
    with spelled_fixes(EVAL_FIXES):
        assert fix("set data.video_root") == "pass --video-root"
