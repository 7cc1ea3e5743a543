"""`--early-exit-confidence` in eval, serve and the demo (issue 49 item 4): the flag's
checks, the answer read from an answer-twice response, and the in-process engines passing
the gate through (a response without a box is the plain greedy response)."""

from __future__ import annotations

import pytest
import torch

from tests.cli_runner import run_cli
from videorl.errors import ConfigError
from videorl.eval import parsing
from videorl.eval.commands import check_early_exit
from videorl.models.generate import SamplingParams, generate
from videorl.models.inputs import encode_prompt
from videorl.models.loading import load_model

from .conftest import write_jsonl
from .test_runner import VTG_ROWS


def test_the_answer_of_an_answer_twice_response():
    assert parsing.answer_text("\\boxed{B}<think>no: C</think>\\boxed{C}") == "C"
    assert parsing.answer_text("\\boxed{B}") == "B"  # an early exit answers a1
    assert parsing.answer_text("<answer>\\boxed{\\frac{1}{2}}</answer>") == "\\frac{1}{2}"
    assert parsing.answer_text("<answer>B</answer>") == "B"


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"confidence": 1.5, "model": "m"}, "not a probability"),
        ({"confidence": 0.97}, "needs --model"),
        ({"confidence": 0.97, "model": "m", "tools": "get_clip"}, "drop --tools"),
    ],
)
def test_flag_checks(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        check_early_exit(**kwargs)
    check_early_exit(None)
    check_early_exit(0.97, model="m")


def test_eval_refuses_early_exit_with_an_endpoint_in_one_line(tmp_path, capsys, monkeypatch):
    benchmark = write_jsonl(tmp_path / "vtg.jsonl", VTG_ROWS)
    args = ("eval", "--endpoint", "http://127.0.0.1:9/v1", "--served-model", "m")
    result = run_cli(
        capsys, monkeypatch, *args, "--benchmark", benchmark, "--early-exit-confidence", "0.97"
    )
    assert result.code != 0 and len(result.lines) == 1
    assert "--early-exit-confidence needs --model" in result.lines[0]


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    torch.manual_seed(0)
    loaded = load_model(tiny_model_dir("qwen2_5_vl"))
    return loaded, encode_prompt(loaded, "Which animal runs? A. cat B. dog")


def test_engines_pass_the_gate_through(tiny):
    """The random tiny model writes no box: the gated response is the plain greedy one, from
    the eval backend, the serve queue and the demo's engine alike."""
    from videorl.eval.backends import HFBackend
    from videorl.rollout.early_exit import generate_with_early_exit
    from videorl.serve.engine import GenerationQueue

    loaded, prompt = tiny
    params = SamplingParams(n=1, max_new_tokens=12, temperature=0.0)
    [plain] = generate(loaded, [prompt], params)
    [gated], [[found]] = generate_with_early_exit(loaded, [prompt], params, 0.97)
    assert torch.equal(gated.token_ids[0], plain.token_ids[0]) and not found.exited
    queue = GenerationQueue(loaded, early_exit=0.97)
    try:
        served = queue.submit(prompt, params, None).result(timeout=120)
    finally:
        queue.close()
    assert torch.equal(served.token_ids[0], plain.token_ids[0])
    backend = HFBackend(loaded, max_new_tokens=12, early_exit=0.97)
    assert backend.without_tools().early_exit == 0.97


def test_eval_reports_what_early_exit_did(tmp_path, capsys, monkeypatch, tiny_model_dir):
    """metrics.json's `early_exit`: the threshold, the answers, the exit rate (0 here: the
    random tiny model writes no box) and the tokens per answer."""
    import json

    from videorl.data.loaders import load_records, write_records
    from videorl.data.synth import synthesize

    records = load_records(synthesize(tmp_path / "qa", ["video_qa"], n=2, seed=1)).records
    write_records(tmp_path / "qa.jsonl", records)
    args = ("eval", "--model", tiny_model_dir("qwen2_5_vl"), "--benchmark", tmp_path / "qa.jsonl")
    extra = ("--max-new-tokens", "8", "--early-exit-confidence", "0.97", "--out", tmp_path / "o")
    result = run_cli(capsys, monkeypatch, *args, *extra)
    assert result.code == 0, result.output
    summary = json.loads((tmp_path / "o" / "metrics.json").read_text())["early_exit"]
    assert summary["threshold"] == 0.97 and summary["answers"] == len(records)
    assert summary["exit_rate"] == 0.0 and 0 < summary["tokens_per_answer"] <= 8
