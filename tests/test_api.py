"""`videorl.api` end to end on the tiny setup (a model, synthetic data, a two-step GRPO run,
an eval), the commands built on the same functions, and `import videorl` kept light."""

from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace

import pytest

from tests.cli_runner import run_cli
from videorl import api
from videorl.cli import evaluate as eval_cli
from videorl.cli import train as train_cli
from videorl.cli.options import EVAL, SERVE
from videorl.errors import ConfigError

SMALL = [
    "data.prompts_per_step=2",
    "rollout.n=2",
    "rollout.max_new_tokens=8",
    "video.max_frames=4",
    "algorithm.estimator=grpo",
    "algorithm.annotation_rows=false",
    "algorithm.pruning.enabled=false",
    "trainer.steps=2",
    "trainer.save_every=0",
    "trainer.val_every=0",
    "trainer.tensorboard=false",
]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """Model, data and a two-step run, each made through `videorl.api`."""
    root = tmp_path_factory.mktemp("api")
    built = api.make_tiny(root / "model")
    manifest = api.synth(root / "data", ["temporal_grounding"], n=4, val=2, tg_events=["appear"])
    overrides = [
        f"model.path={built.path}",
        f"data.train={root / 'data/train.jsonl'}",
        f"data.val={root / 'data/val.jsonl'}",
        f"trainer.output_dir={root / 'run'}",
        *SMALL,
    ]
    cfg = api.load_config("quickstart", overrides)
    return root, manifest, cfg, api.train(cfg)


def test_train_through_the_api_writes_final_and_two_steps(tiny_run):
    root, manifest, cfg, final = tiny_run
    assert manifest["records"] == {"train": 4, "val": 2}
    assert "temporal_grounding" in manifest["blind_best"]
    assert final == root / "run" / "final" and (final / "config.json").is_file()
    rows = (root / "run" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(row)["step"] for row in rows if '"step"' in row][-1] == 2
    assert cfg.trainer.steps == 2


def test_evaluate_through_the_api_returns_the_metrics(tiny_run):
    root, _, _, final = tiny_run
    outputs = api.evaluate(
        model=str(final), benchmark=str(root / "data/val.jsonl"), out=root / "eval", device="cpu",
        max_new_tokens=8, max_frames=4,
    )  # fmt: skip
    assert outputs is not None and outputs.out_dir == root / "eval"
    assert outputs.metrics == json.loads((root / "eval/metrics.json").read_text())
    assert "temporal_grounding" in outputs.metrics["families"]


def test_load_config_refuses_an_unknown_key_naming_it():
    with pytest.raises(ConfigError, match="trainer.stepz"):
        api.load_config("quickstart", ["trainer.stepz=3"])


def test_with_reward_plugin_sets_the_family_plugin():
    cfg = api.load_config(None)
    plugged = api.with_reward_plugin(
        cfg, "temporal_grounding", "tests.trainer.length_reward:reward"
    )
    assert plugged.reward.plugins == {"temporal_grounding": "tests.trainer.length_reward:reward"}
    assert cfg.reward.plugins == {}


def test_the_commands_call_the_api(monkeypatch, capsys, tmp_path):
    """`videorl train/sft` load through `api.load_config` and run `api.train`/`api.sft`;
    `videorl eval/serve` have exactly the parameters of `api.evaluate`/`api.serve`."""
    import inspect

    calls = []
    fake_cfg = SimpleNamespace(trainer=SimpleNamespace(output_dir=str(tmp_path), device="cpu"))
    monkeypatch.setattr(
        api,
        "load_config",
        lambda config, overrides: calls.append(config) or fake_cfg,  # type: ignore[func-returns-value]  # records the call, then returns the stub's value
    )
    for command, name in (("train", "train"), ("sft", "sft")):
        monkeypatch.setattr(api, name, lambda cfg, **kw: calls.append(kw) or tmp_path / "final")  # type: ignore[func-returns-value]  # records the call, then returns the stub's value
        assert run_cli(capsys, monkeypatch, command, "quickstart").code == 0
    assert calls == ["quickstart", {"resume": None, "overwrite": False}] * 2
    for handler, function, flags in (
        (eval_cli.eval_command, api.evaluate, EVAL),
        (eval_cli.serve_command, api.serve, SERVE),
    ):
        own = inspect.signature(function).parameters
        cli = inspect.signature(handler).parameters
        assert list(cli) == list(own) == list(flags)
        assert [p.default for p in cli.values()] == [p.default for p in own.values()]
    seen = {}
    monkeypatch.setattr(api, "evaluate", lambda **kw: seen.update(kw))
    assert run_cli(capsys, monkeypatch, "eval", "--predictions", "p.jsonl", "--fps", "2").code == 0
    assert seen["predictions"].name == "p.jsonl" and seen["fps"] == 2.0
    assert train_cli.TrainingJob.__dataclass_fields__.keys() >= {"config", "nproc"}


def test_import_videorl_stays_light():
    """Neither `import videorl` nor `import videorl.api` loads torch; `videorl.train` is
    the API's function."""
    code = (
        "import sys, videorl, videorl.api; print('torch' in sys.modules, "
        "videorl.train is videorl.api.train)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


def test_the_register_names_are_the_registries_own_functions():
    from videorl.algorithms.advantages import register_advantage
    from videorl.rollout.tools.registry import register_tool

    assert api.register_tool is register_tool
    assert api.register_advantage_estimator is register_advantage
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        api.nothing  # noqa: B018
