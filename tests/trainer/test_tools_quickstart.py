"""`videorl train tools_quickstart` (configs/tools_quickstart.yaml) runs on a CPU from a
`videorl make-tiny` model and `videorl synth` data, and logs the tools/* metrics; an unknown
tool name is a one-line error."""

from __future__ import annotations

import pytest

from tests.cli_runner import run_cli
from videorl.trainer.metrics import read_metrics

TOOL_METRICS = (
    "tools/calls_per_row",
    "tools/errors_per_row",
    "tools/turns_mean",
    "tools/turns_max",
)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """A tiny Qwen3-VL and four synthetic 'appear' temporal-grounding records, as a user
    makes them (the recipe header's commands)."""
    from videorl.data.synth import write_dataset
    from videorl.models.tiny import build_tiny_model

    root = tmp_path_factory.mktemp("tools_quickstart")
    model = build_tiny_model("qwen3_vl", root / "model")
    write_dataset(root / "data", ["temporal_grounding"], n=4, val=0, seed=0, tg_events=("appear",))
    return model, root / "data" / "train.jsonl"


def _overrides(model, train, out, *extra):
    return [
        f"model.path={model}",
        f"data.train={train}",
        "data.val=null",
        f"trainer.output_dir={out}",
        "trainer.steps=2",
        "trainer.save_every=0",
        "trainer.tensorboard=false",
        "data.prompts_per_step=2",
        "rollout.n=4",
        *extra,
    ]


def test_tools_quickstart_trains_on_cpu_and_logs_tool_metrics(
    capsys, monkeypatch, inputs, tmp_path
):
    model, train = inputs
    out = tmp_path / "train"
    result = run_cli(
        capsys, monkeypatch, "train", "tools_quickstart", *_overrides(model, train, out)
    )
    assert result.code == 0, result.output
    rows = read_metrics(out / "metrics.jsonl")
    assert [row["step"] for row in rows] == [1, 2]
    for row in rows:
        assert all(key in row for key in TOOL_METRICS), sorted(row)
        assert 1 <= row["tools/turns_mean"] <= row["tools/turns_max"] <= 3
    assert (out / "final").is_dir()


def test_an_unknown_tool_is_a_one_line_error(capsys, monkeypatch, inputs, tmp_path):
    model, train = inputs
    overrides = _overrides(model, train, tmp_path / "train", "rollout.tools=[get_clip, zoom]")
    result = run_cli(capsys, monkeypatch, "train", "tools_quickstart", *overrides)
    assert result.code == 2 and len(result.lines) == 1, result.output
    assert "rollout.tools" in result.output and "'zoom'" in result.output
    assert "get_clip" in result.output
