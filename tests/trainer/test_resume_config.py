"""`--resume` with overrides: a key that cannot change mid-run is refused in one line; one
that can is applied for real, and config.yaml records what the run uses."""

from __future__ import annotations

import json

import pytest

from tests.cli_runner import run_cli
from videorl.api import resolve_config_path
from videorl.config import load_config
from videorl.config.loader import to_dict
from videorl.config.run import save_run_config
from videorl.errors import ConfigError
from videorl.trainer.resume_config import _flat, reconcile

from .test_sft import sft_overrides


def _saved(*overrides: str) -> dict:
    return _flat(to_dict(load_config(resolve_config_path("quickstart"), list(overrides))))


def _config(*overrides: str):
    return load_config(resolve_config_path("quickstart"), list(overrides))


def test_keys_that_shaped_the_checkpoint_are_refused_in_one_line():
    with pytest.raises(ConfigError) as err:
        reconcile(_config("optim.lr=0.5", "rollout.temperature=0.7", "trainer.steps=9"), _saved())
    lr = _config().optim.lr  # the quickstart recipe's rate
    assert str(err.value).startswith(
        f"--resume would change rollout.temperature (1.0 -> 0.7), optim.lr ({lr} -> 0.5), "
        "which cannot change mid-run"
    )


def test_more_steps_keep_the_schedules_span():
    cfg, notes = reconcile(_config("trainer.steps=300"), _saved())
    assert cfg.trainer.steps == 300 and cfg.optim.schedule_steps == 150
    assert notes == [
        "trainer.steps: 150 -> 300",
        "optim.schedule_steps=150: the learning-rate schedule keeps the run's span",
    ]
    again, _ = reconcile(_config("trainer.steps=300"), _flat(to_dict(cfg)))  # a second resume
    assert again.optim.schedule_steps == 150
    with pytest.raises(ConfigError, match=r"optim.schedule_steps \(150 -> 200\)"):
        reconcile(_config("trainer.steps=300", "optim.schedule_steps=200"), _flat(to_dict(cfg)))
    same, notes = reconcile(_config("trainer.save_every=10"), _saved())
    assert same.optim.schedule_steps is None and notes == ["trainer.save_every: 75 -> 10"]


def test_resume_auto_with_a_refused_override_is_one_line(tmp_path, capsys, monkeypatch):
    run = tmp_path / "run"
    save_run_config(_config(f"trainer.output_dir={run}"), run)
    (run / "step-000002").mkdir()
    (run / "step-000002" / "state.pt").write_bytes(b"")
    args = ("train", "quickstart", f"trainer.output_dir={run}", "--resume", "auto", "--dry-run")
    refused = run_cli(capsys, monkeypatch, *args, "trainer.steps=18", "optim.lr=0.5")
    assert refused.code == 2 and len(refused.lines) == 1
    lr = _config().optim.lr
    assert refused.lines[0].startswith(f"error: --resume would change optim.lr ({lr} -> 0.5),")
    applied = run_cli(capsys, monkeypatch, *args, "trainer.steps=18")
    assert applied.code == 0, applied.output
    assert "resume: trainer.steps: 150 -> 18" in applied.lines
    assert "  schedule_steps: 150" in applied.output


def test_a_resumed_sft_run_trains_the_added_steps_on_the_saved_schedule(
    tiny_model_dir, tg_data, tmp_path, capsys, monkeypatch
):
    out = tmp_path / "run"
    common = sft_overrides(tiny_model_dir(), tg_data, out, "trainer.val_every=0")
    schedule = ["optim.schedule=cosine", "optim.min_lr_ratio=0.1", "optim.warmup_steps=0"]
    first = run_cli(capsys, monkeypatch, "sft", "sft_quickstart", *common, *schedule,
                    "trainer.steps=2", "trainer.save_every=2")  # fmt: skip
    assert first.code == 0, first.output
    resumed = run_cli(capsys, monkeypatch, "sft", "sft_quickstart", *common, *schedule,
                      "trainer.steps=4", "trainer.save_every=2", "--resume", "auto")  # fmt: skip
    assert resumed.code == 0, resumed.output
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    lr = {row["step"]: row["lr"] for row in rows}
    base = load_config(out / "config.yaml").optim.lr
    assert lr[3] == pytest.approx(0.1 * base) and lr[4] == pytest.approx(0.1 * base)
    assert lr[3] <= lr[2]  # no jump back up
    recorded = load_config(out / "config.yaml")
    assert recorded.trainer.steps == 4 and recorded.optim.schedule_steps == 2


def test_steps_derived_from_epochs_are_not_a_change():
    """With trainer.epochs the saved steps are the derived ones; the recipe's are not."""
    saved = _saved("trainer.epochs=2")
    saved["trainer.steps"] = 40  # what build_state derived and config.yaml recorded
    cfg, notes = reconcile(_config("trainer.epochs=2"), saved)
    assert cfg.optim.schedule_steps == 40
    assert notes == ["optim.schedule_steps=40: the learning-rate schedule keeps the run's span"]
