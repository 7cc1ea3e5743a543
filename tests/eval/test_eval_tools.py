"""`videorl eval --tools`: answers come from the trainer's multi-turn tool loop, the records
are answered again without tools, and metrics.json, report.md and predictions.jsonl show
the calls per answer, the errors, the turns and both scores side by side. A scripted model
proves the wiring; a real tiny model runs it through the CLI."""

from __future__ import annotations

import json

import pytest
import torch

from tests.cli_runner import run_cli
from videorl.eval.backends import HFBackend
from videorl.eval.runner import EvalSettings, evaluate
from videorl.inference import RunSettings
from videorl.models import generate as generate_module
from videorl.models.generate import Generation
from videorl.models.loading import load_model
from videorl.rollout import multiturn
from videorl.rollout.multiturn import MultiTurnLimits
from videorl.rollout.tools import ToolRunner, resolve_tools

from .conftest import SMALL_VIDEO

CLIP = '<tool_call>{"name": "get_clip", "arguments": {"start": 0, "end": 4, "fps": 2}}</tool_call>'
ZOOM = '<tool_call>{"name": "zoom", "arguments": {"time": 1}}</tool_call>'
WITH_TOOL = "<answer>0 to 60</answer>"  # the whole video: IoU > 0 on every record
WITHOUT_TOOL = "<answer>0 to 0.1</answer>"
TG = "temporal_grounding"


class ScriptedModel:
    """`generate` stand-ins. With tools: on the first turn even prompts call get_clip and
    odd ones an unknown tool, then every row answers WITH_TOOL; without tools: WITHOUT_TOOL.
    Keeps the contexts of every multi-turn call."""

    def __init__(self, loaded):
        self.loaded = loaded
        self.turns: list[list] = []

    def _gen(self, text: str) -> Generation:
        ids = self.loaded.tokenizer(text, add_special_tokens=False)["input_ids"]
        return Generation([torch.tensor(ids + [self.loaded.eos_token_ids[0]])], [], [False])

    def with_tools(self, loaded, contexts, params):
        first = not self.turns
        self.turns.append(list(contexts))
        if first:
            return [self._gen(CLIP if i % 2 == 0 else ZOOM) for i in range(len(contexts))]
        return [self._gen(WITH_TOOL) for _ in contexts]

    def without_tools(self, loaded, prompts, params):
        return [self._gen(WITHOUT_TOOL) for _ in prompts]


@pytest.fixture(scope="module")
def tiny_qwen3(tiny_model_dir):
    return tiny_model_dir("qwen3_vl")


def _backend(path: str, tools=("get_clip",), max_turns: int = 3) -> HFBackend:
    runner = ToolRunner(resolve_tools(tools))
    return HFBackend(
        load_model(path, dtype=torch.float32, device="cpu"),
        RunSettings(video=SMALL_VIDEO),
        max_new_tokens=48,
        label="scripted",
        tools=runner,
        limits=MultiTurnLimits(max_turns=max_turns, max_total_tokens=1024),
    )


def _scripted(path: str, monkeypatch, max_turns: int = 3) -> tuple[HFBackend, ScriptedModel]:
    """A backend with get_clip whose generations come from a `ScriptedModel`."""
    backend = _backend(path, max_turns=max_turns)
    model = ScriptedModel(backend.loaded)
    monkeypatch.setattr(multiturn, "generate", model.with_tools)
    monkeypatch.setattr(generate_module, "generate", model.without_tools)
    return backend, model


def test_tool_answers_are_scored_beside_answers_without_tools(
    tiny_qwen3, synth_tg, tmp_path, monkeypatch
):
    backend, model = _scripted(tiny_qwen3, monkeypatch)
    settings = EvalSettings(
        benchmark=str(synth_tg), out_dir=tmp_path / "eval", video=SMALL_VIDEO, progress=False
    )
    outputs = evaluate(settings, backend=backend, source={"model": "scripted"})
    backend.tools.close()

    # two generation calls: the first turn of all six prompts (listing the tool), the answers
    assert [len(turn) for turn in model.turns] == [6, 6]
    first_prompt = backend.loaded.tokenizer.decode(model.turns[0][0].input_ids)
    assert "get_clip" in first_prompt and "<tools>" in first_prompt
    # the answers after get_clip saw the clip: its video tokens follow the prompt
    after_clip = model.turns[1][0]
    assert (after_clip.mm_token_type_ids[model.turns[0][0].length :] == 2).any()

    lines = [json.loads(x) for x in outputs.predictions.read_text().splitlines()]
    assert [line["response"] for line in lines] == [WITH_TOOL] * 6
    assert [line["tools"] for line in lines] == [
        {"calls": 1, "errors": i % 2, "turns": 2} for i in range(6)
    ]
    plain = outputs.out_dir / "no_tools" / "predictions.jsonl"
    assert [json.loads(x)["response"] for x in plain.read_text().splitlines()] == [WITHOUT_TOOL] * 6

    entry = outputs.metrics["tools"]
    assert entry["tools"] == ["get_clip"] and entry["max_turns"] == 3
    assert entry["use"] == {
        "answers": 6,
        "calls_per_answer": 1.0,
        "errors_per_answer": 0.5,
        "turns_mean": 2.0,
        "turns_max": 2,
        "answers_with_calls": 1.0,
    }
    assert entry["with_tools"][TG] == outputs.metrics["families"][TG]["metrics"]
    for metric, gain in entry["tool_gain"][TG].items():
        on, off = entry["with_tools"][TG][metric], entry["without_tools"][TG][metric]
        assert gain == pytest.approx(on - off)
    assert entry["with_tools"][TG]["mIoU"] != entry["without_tools"][TG]["mIoU"]
    saved = json.loads(outputs.metrics_path.read_text())
    assert saved["tools"] == entry
    report = outputs.report.read_text()
    assert "## Tools" in report and "calls / answer" in report and "| 1.00 | 0.50 |" in report


def test_a_turn_budget_of_one_answers_without_calling(tiny_qwen3, synth_tg, tmp_path, monkeypatch):
    backend, _ = _scripted(tiny_qwen3, monkeypatch, max_turns=1)
    settings = EvalSettings(
        benchmark=str(synth_tg), out_dir=tmp_path / "eval", video=SMALL_VIDEO, progress=False
    )
    use = evaluate(settings, backend=backend)
    backend.tools.close()
    # the only turn was a call: no call ran, and the answer scored is that turn
    assert use.metrics["tools"]["use"]["calls_per_answer"] == 0.0
    assert use.metrics["tools"]["use"]["turns_max"] == 1
    responses = [json.loads(x)["response"] for x in use.predictions.read_text().splitlines()]
    assert all('"name": "get_clip"' in r or '"name": "zoom"' in r for r in responses)


def test_controls_with_tools_answer_with_the_tools_on_control_media(
    tiny_qwen3, synth_tg, tmp_path, monkeypatch
):
    backend, _ = _scripted(tiny_qwen3, monkeypatch)
    seen: list[str | None] = []
    real_answer = multiturn.answer_with_tools

    def spy(*args, control=None, **kwargs):
        seen.append(control)
        return real_answer(*args, control=control, **kwargs)

    monkeypatch.setattr(multiturn, "answer_with_tools", spy)
    settings = EvalSettings(
        benchmark=str(synth_tg),
        out_dir=tmp_path / "eval",
        video=SMALL_VIDEO,
        progress=False,
        controls=("frozen",),
    )
    outputs = evaluate(settings, backend=backend)
    backend.tools.close()
    assert seen == [None, "frozen"]  # the real answers, then the control's, both with tools
    control = outputs.out_dir / "controls" / "frozen" / "predictions.jsonl"
    assert all("tools" in json.loads(x) for x in control.read_text().splitlines())
    assert "frozen" in outputs.metrics["controls"]


def test_an_unknown_tool_is_one_line_and_exit_2(capsys, monkeypatch, synth_tg, tmp_path):
    args = ["eval", "--model", "no/such-model", "--benchmark", synth_tg, "--out", tmp_path]
    result = run_cli(capsys, monkeypatch, *args, "--tools", "get_clip,zoom")
    assert result.code == 2 and len(result.lines) == 1, result.output
    assert "--tools" in result.output and "'zoom'" in result.output and "crop" in result.output


def test_tools_need_a_local_model(capsys, monkeypatch, tmp_path):
    predictions = tmp_path / "p.jsonl"
    predictions.write_text('{"id": "a", "response": "x"}\n')
    args = ["eval", "--predictions", predictions, "--benchmark", predictions, "--tools", "crop"]
    result = run_cli(capsys, monkeypatch, *args)
    assert result.code == 2 and len(result.lines) == 1, result.output
    assert "--tools needs --model" in result.output


@pytest.mark.slow
def test_tiny_model_evaluates_with_tools_through_the_cli(
    capsys, monkeypatch, tiny_qwen3, synth_tg, tmp_path
):
    out = tmp_path / "eval"
    result = run_cli(
        capsys,
        monkeypatch,
        "eval",
        "--model",
        tiny_qwen3,
        "--benchmark",
        synth_tg,
        "--out",
        out,
        "--tools",
        "get_clip,crop",
        "--max-turns",
        "2",
        "--max-new-tokens",
        "24",
        "--max-frames",
        "4",
        "--max-pixels",
        str(4 * 28 * 28),
    )
    assert result.code == 0, result.output
    assert "tools get_clip, crop" in result.output
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["source"]["tools"] == ["get_clip", "crop"]
    use = metrics["tools"]["use"]
    assert use["answers"] == 6 and 1 <= use["turns_mean"] <= use["turns_max"] <= 2
    assert set(metrics["tools"]["tool_gain"]) == {TG}
    assert (out / "no_tools" / "predictions.jsonl").is_file()
    assert "## Tools" in (out / "report.md").read_text()


def test_tool_modules_register_the_users_tools(capsys, monkeypatch, tiny_qwen3, synth_tg, tmp_path):
    """--tool-modules imports a module whose @register_tool tool the model then calls."""
    from tests.trainer.test_tools_validation import FRAME_COUNT, user_tool_module

    user_tool_module(tmp_path, monkeypatch, "eval_frame_count_tools", FRAME_COUNT)
    count = '<tool_call>{"name": "frame_count", "arguments": {}}</tool_call>'
    first_prompts: list[str] = []

    def answers(loaded, contexts, text):
        ids = loaded.tokenizer(text, add_special_tokens=False)["input_ids"] + [
            loaded.eos_token_ids[0]
        ]
        return [Generation([torch.tensor(ids)], [], [False]) for _ in contexts]

    def with_tools(loaded, contexts, params):
        first = not first_prompts
        first_prompts.extend(loaded.tokenizer.decode(c.input_ids) for c in contexts if first)
        return answers(loaded, contexts, count if first else WITH_TOOL)

    monkeypatch.setattr(multiturn, "generate", with_tools)
    monkeypatch.setattr(
        generate_module, "generate", lambda loaded, p, _: answers(loaded, p, WITHOUT_TOOL)
    )
    out = tmp_path / "eval"
    args = ["eval", "--model", tiny_qwen3, "--benchmark", synth_tg, "--out", out]
    extra = ["--max-samples", "2", "--max-frames", "4", "--max-pixels", str(4 * 28 * 28)]
    modules = ["--tools", "frame_count", "--tool-modules", "eval_frame_count_tools"]
    result = run_cli(capsys, monkeypatch, *args, *extra, *modules)
    assert result.code == 0, result.output

    assert len(first_prompts) == 2 and all("frame_count" in p for p in first_prompts)
    lines = [json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()]
    assert [line["tools"] for line in lines] == [{"calls": 1, "errors": 0, "turns": 2}] * 2
    source = json.loads((out / "metrics.json").read_text())["source"]
    assert source["tools"] == ["frame_count"]
    assert source["tool_modules"] == ["eval_frame_count_tools"]


def test_a_tool_module_that_does_not_import_is_one_line(capsys, monkeypatch, synth_tg, tmp_path):
    args = ["eval", "--model", "no/such-model", "--benchmark", synth_tg, "--out", tmp_path]
    result = run_cli(
        capsys, monkeypatch, *args, "--tools", "get_clip", "--tool-modules", "no_such_tools_mod"
    )
    assert result.code == 2 and len(result.lines) == 1, result.output
    assert "--tool-modules: cannot import 'no_such_tools_mod'" in result.output


def test_tool_modules_need_tools(capsys, monkeypatch, synth_tg, tmp_path):
    args = ["eval", "--model", "no/such-model", "--benchmark", synth_tg, "--out", tmp_path]
    result = run_cli(capsys, monkeypatch, *args, "--tool-modules", "my_tools")
    assert result.code == 2 and len(result.lines) == 1, result.output
    assert "--tool-modules" in result.output and "--tools" in result.output
