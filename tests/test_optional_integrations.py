"""Optional integrations fail when the config loads, in one line naming the extra to install."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from videorl.cli import main
from videorl.config import load_config
from videorl.errors import ConfigError


@pytest.fixture
def no_wandb(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "wandb" else real(name, *a)
    )


def test_wandb_missing_fails_at_config_time(no_wandb):
    with pytest.raises(
        ConfigError, match=r"trainer.wandb_project='p' .*pip install 'videorl\[wandb\]'"
    ):
        load_config(None, ["trainer.wandb_project=p"])
    assert load_config(None, []).trainer.wandb_project is None


def test_cli_prints_the_install_line_verbatim(no_wandb, monkeypatch, capsys):
    monkeypatch.setattr(
        sys, "argv", ["videorl", "train", "quickstart", "trainer.wandb_project=p", "--dry-run"]
    )
    with pytest.raises(SystemExit) as exit_info:
        main()
    out = capsys.readouterr().out
    assert exit_info.value.code == 2
    assert "pip install 'videorl[wandb]'" in out and "Traceback" not in out
