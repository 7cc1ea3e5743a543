"""Validation inside training with `rollout.tools` (docs/tools.md): `videorl train` (and
`videorl sft` with `sft.target=tool_trajectory`) answer the validation prompts with the
multi-turn loop of training's rollouts and `videorl eval --tools`, log `val/tools/*`, and
refuse video controls; `--dry-run` checks the tool names and modules as the run does.

A scripted engine (`ScriptedEngine` playing `test_tools.SCRIPT`: sample 0 of each prompt
calls `get_clip` on its first turn, every other turn answers) proves the wiring; real
tiny-model runs go through the CLI."""

from __future__ import annotations

import sys
import textwrap
from dataclasses import replace

import pytest

from tests.cli_runner import run_cli
from tests.trainer.runs import metrics_by_step
from tests.trainer.test_sft import sft_config
from tests.trainer.test_tools import SCRIPT, TOOL_REWARD, TOOLS
from videorl.rollout.scripted import ScriptedEngine
from videorl.trainer.build import build_state
from videorl.trainer.sft import greedy_validate
from videorl.trainer.validation import validate

NO_CONTROLS = "trainer.val_controls=[]"  # no second (control) validation pass
TOOL_SFT = [
    "sft.target=tool_trajectory",
    "rollout.tools=[get_clip]",
    "sft.max_response_tokens=512",
    NO_CONTROLS,
]
VAL_TOOL_METRICS = (
    "val/tools/calls_per_answer",
    "val/tools/errors_per_answer",
    "val/tools/turns_mean",
    "val/tools/turns_max",
    "val/tools/answers_with_calls",
)


def _scripted(config):
    """The run's state with the scripted engine in place of the rollout engine."""
    state = build_state(config, None)
    state.engine = ScriptedEngine(state.engine.loaded, SCRIPT)
    return state


def _decoded(state, contexts) -> list[str]:
    return [state.policy.tokenizer.decode(c.input_ids) for c in contexts]


@pytest.fixture
def tool_state(make_config):
    """GRPO with get_clip, 2 validation samples per prompt, a reward that pays a call."""
    config, _ = make_config("grpo", *TOOLS, "trainer.val_samples=2", NO_CONTROLS)
    config = replace(config, reward=replace(config.reward, plugins=TOOL_REWARD))
    state = _scripted(config)
    yield state
    state.tools.close()


def test_validation_answers_with_the_tools_of_training(tool_state):
    state, engine = tool_state, tool_state.engine
    metrics = validate(state)

    prompts = len(state.val_records)
    # first turn: every validation prompt, listing the tools as training's prompts do
    assert len(engine.calls[0]) == prompts
    assert all(
        "<tools>" in text and "get_clip" in text for text in _decoded(state, engine.calls[0])
    )
    # second turn: the calling sample of each prompt continues after the tool turn, whose
    # clip the model sees as video tokens after the prompt
    assert len(engine.calls[1]) == prompts
    for context, prompt in zip(engine.calls[1], engine.calls[0], strict=True):
        assert (context.mm_token_type_ids[prompt.length :] == 2).any()
        assert context.vision["video_grid_thw"].shape[0] == 2  # the prompt's video and the clip

    # one sample of two called get_clip (which ran) and answered in its second turn
    assert metrics["val/tools/calls_per_answer"] == 0.5
    assert metrics["val/tools/errors_per_answer"] == 0.0
    assert metrics["val/tools/turns_mean"] == 1.5 and metrics["val/tools/turns_max"] == 2.0
    assert metrics["val/tools/answers_with_calls"] == 0.5
    # the reward plug-in saw the calls (it pays a call that ran): mean 1/2, best 1
    assert metrics["val/reward_mean_at_k"] == 0.5 and metrics["val/reward_best_at_k"] == 1.0


def test_validation_keeps_to_the_turn_budget(tool_state):
    state = tool_state
    state.cfg = replace(state.cfg, rollout=replace(state.cfg.rollout, max_turns=1))
    metrics = validate(state)
    # the only turn of the calling sample was its call: no call ran, nothing continued
    assert len(state.engine.calls) == 1
    assert metrics["val/tools/calls_per_answer"] == 0.0 and metrics["val/tools/turns_max"] == 1.0
    assert metrics["val/reward_mean_at_k"] == 0.0


def test_validation_without_tools_lists_none_and_logs_no_tool_metrics(make_config):
    config, _ = make_config("grpo", "trainer.val_samples=2", NO_CONTROLS)
    state = _scripted(config)
    metrics = validate(state)
    assert len(state.engine.calls) == 1  # single-turn: the call of the first turn is the answer
    assert not any("<tools>" in text for text in _decoded(state, state.engine.calls[0]))
    assert not any(key.startswith("val/tools/") for key in metrics)


@pytest.mark.parametrize(
    ("target", "with_tools"), [("tool_trajectory", True), ("annotation", False)]
)
def test_sft_validation_uses_the_tools_with_tool_trajectories(
    tiny_model_dir, tg_data, tmp_path, target, with_tools
):
    config = sft_config(
        tiny_model_dir(), tg_data, tmp_path / "sft", *TOOL_SFT, f"sft.target={target}"
    )
    state = _scripted(config)
    try:
        metrics = greedy_validate(state)
    finally:
        state.tools.close()
    engine = state.engine
    listed = ["<tools>" in text for text in _decoded(state, engine.calls[0])]
    assert listed == [with_tools] * len(state.val_records)
    if with_tools:  # greedy, one answer per prompt: it calls get_clip, then answers
        assert len(engine.calls) == 2
        assert metrics["val/tools/calls_per_answer"] == 1.0
        assert metrics["val/tools/turns_mean"] == 2.0
    else:  # the call is the answer: no tool runs
        assert len(engine.calls) == 1
        assert not any(key.startswith("val/tools/") for key in metrics)


# ----- real runs through the CLI --------------------------------------------------------------
@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """A tiny Qwen3-VL and synthetic 'appear' temporal-grounding records with two for
    validation (the tools quickstart's data, smaller)."""
    from videorl.data.synth import write_dataset
    from videorl.models.tiny import build_tiny_model

    root = tmp_path_factory.mktemp("tools_validation")
    model = build_tiny_model("qwen3_vl", root / "model")
    write_dataset(root / "data", ["temporal_grounding"], n=4, val=2, seed=0, tg_events=("appear",))
    return model, root / "data"


def _overrides(model, data, out, *extra):
    return [
        f"model.path={model}",
        f"data.train={data / 'train.jsonl'}",
        f"data.val={data / 'val.jsonl'}",
        f"trainer.output_dir={out}",
        "trainer.steps=1",
        "trainer.save_every=0",
        "trainer.tensorboard=false",
        "data.prompts_per_step=2",
        "rollout.n=2",
        *extra,
    ]


def test_tools_quickstart_validates_with_tools(capsys, monkeypatch, inputs, tmp_path):
    model, data = inputs
    out = tmp_path / "train"
    extra = ("trainer.val_every=1", "trainer.val_samples=2", "rollout.max_turns=2")
    result = run_cli(
        capsys, monkeypatch, "train", "tools_quickstart", *_overrides(model, data, out, *extra)
    )
    assert result.code == 0, result.output
    row = metrics_by_step(out)[1]
    assert all(key in row for key in VAL_TOOL_METRICS), sorted(row)
    assert 1.0 <= row["val/tools/turns_mean"] <= row["val/tools/turns_max"] <= 2.0
    assert 0.0 <= row["val/tools/errors_per_answer"] <= row["val/tools/calls_per_answer"]
    assert 0.0 <= row["val/reward_mean_at_k"] <= row["val/reward_best_at_k"] <= 1.0


def test_sft_with_tool_trajectories_validates_with_tools(capsys, monkeypatch, inputs, tmp_path):
    model, data = inputs
    out = tmp_path / "sft"
    overrides = _overrides(
        model, data, out, *TOOL_SFT, "trainer.val_every=1", "rollout.max_new_tokens=96"
    )
    result = run_cli(capsys, monkeypatch, "sft", "sft_quickstart", *overrides)
    assert result.code == 0, result.output
    row = metrics_by_step(out)[1]
    assert all(key in row for key in VAL_TOOL_METRICS), sorted(row)
    assert 1.0 <= row["val/tools/turns_mean"] <= row["val/tools/turns_max"]


def test_validation_controls_answer_with_the_tools_on_control_media(
    capsys, monkeypatch, inputs, tmp_path
):
    from videorl.rollout import multiturn

    seen: list[str | None] = []
    real_answer = multiturn.answer_with_tools

    def spy(*args, control=None, **kwargs):
        seen.append(control)
        return real_answer(*args, control=control, **kwargs)

    monkeypatch.setattr("videorl.trainer.validation.answer_with_tools", spy)
    model, data = inputs
    out = tmp_path / "train"
    extra = ("trainer.val_every=1", "trainer.val_controls=[frozen]", "rollout.max_turns=2")
    result = run_cli(
        capsys, monkeypatch, "train", "tools_quickstart", *_overrides(model, data, out, *extra)
    )
    assert result.code == 0, result.output
    assert None in seen and "frozen" in seen  # the real answers and the control's, with tools
    row = metrics_by_step(out)[1]
    assert "val/video_gain/frozen" in row and "val/tools/calls_per_answer" in row


# ----- --dry-run checks the tools -------------------------------------------------------------
def user_tool_module(tmp_path, monkeypatch, module: str, body: str) -> None:
    """A module `module` on sys.path (imported afresh) with `body` as its source."""
    (tmp_path / f"{module}.py").write_text(textwrap.dedent(body))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, module, raising=False)


FRAME_COUNT = """
    from videorl.rollout.tools import register_tool


    @register_tool(
        description="The number of frames the prompt showed.",
        parameters={"type": "object", "properties": {}, "additionalProperties": False},
        replace=True,
    )
    def frame_count(ctx):
        return f"{ctx.video.frames.shape[0]} frames"
"""


@pytest.mark.parametrize("command", ["train", "sft"])
def test_dry_run_refuses_an_unknown_tool_in_one_line(
    capsys, monkeypatch, inputs, tmp_path, command
):
    model, data = inputs
    overrides = _overrides(model, data, tmp_path / "run", "rollout.tools=[get_clip, zoom]")
    result = run_cli(capsys, monkeypatch, command, "tools_quickstart", "--dry-run", *overrides)
    assert result.code == 2 and len(result.lines) == 1, result.output
    assert "rollout.tools" in result.output and "'zoom'" in result.output
    assert "get_clip" in result.output and "crop" in result.output  # the registered tools


def test_dry_run_imports_tool_modules(capsys, monkeypatch, inputs, tmp_path):
    model, data = inputs
    base = _overrides(model, data, tmp_path / "run")

    def dry_run(*extra: str):
        return run_cli(capsys, monkeypatch, "train", "tools_quickstart", "--dry-run", *base, *extra)

    missing = dry_run("rollout.tool_modules=[no_such_tools_module]")
    assert missing.code == 2 and len(missing.lines) == 1, missing.output
    assert "rollout.tool_modules: cannot import 'no_such_tools_module'" in missing.output

    user_tool_module(tmp_path, monkeypatch, "broken_tools_module", "raise RuntimeError('boom')")
    broken = dry_run("rollout.tool_modules=[broken_tools_module]")
    assert broken.code == 2 and len(broken.lines) == 1, broken.output
    assert "'broken_tools_module' failed (RuntimeError: boom)" in broken.output

    user_tool_module(tmp_path, monkeypatch, "needs_a_dependency", "import no_such_dependency")
    dependency = dry_run("rollout.tool_modules=[needs_a_dependency]")
    assert dependency.code == 2 and len(dependency.lines) == 1, dependency.output
    assert "importing 'needs_a_dependency' failed (ModuleNotFoundError" in dependency.output
    assert "PYTHONPATH" not in dependency.output  # the module was found; its import was not

    user_tool_module(tmp_path, monkeypatch, "frame_count_tools", FRAME_COUNT)
    found = dry_run(
        "rollout.tools=[get_clip, frame_count]",
        "rollout.tool_modules=[frame_count_tools]",
        "trainer.val_every=1",
    )
    assert found.code == 0, found.output
    assert "frame_count" in found.output  # the resolved config and the plan's tools row


def test_the_plan_says_validation_answers_with_the_tools(make_config):
    from videorl.config.plan import plan_step, sft_plan_table

    config, _ = make_config(
        "grpo", *TOOLS, "trainer.val_every=2", "trainer.val_samples=2", NO_CONTROLS
    )
    assert plan_step(config).validation.startswith("first 8 prompts x 2 samples with get_clip")
    assert "(<= 3 model turns), every 2 steps" in plan_step(config).validation
    plain, _ = make_config("grpo", "trainer.val_every=2", "trainer.val_samples=2")
    assert "with" not in plan_step(plain).validation
    sft = replace(config, sft=replace(config.sft, target="tool_trajectory"))
    rows = sft_plan_table(sft).columns[1]._cells
    assert any("1 greedy answer with get_clip" in str(cell) for cell in rows)
