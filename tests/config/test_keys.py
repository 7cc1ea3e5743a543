"""A config typo is reported before the config's modules (and torch) load, with the same
line as the full loader."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from videorl.api import resolve_config_path
from videorl.config import load_config
from videorl.config.keys import KEYS_FILE, check_recipe_keys
from videorl.config.reference import key_table
from videorl.errors import ConfigError


def test_the_key_file_is_current():
    """Regenerate with `python -m videorl.config.reference --keys > src/videorl/config/keys.json`."""
    assert json.loads(KEYS_FILE.read_text()) == key_table()


@pytest.mark.parametrize(
    "overrides",
    [
        ["trainer.stpes=3"],
        ["trainr.steps=3"],
        ["algorithm.pruning.prune_ratoi=0.5"],
        ["reward.judge.urll=http://x"],
        ["model.lora.rnak=8"],
    ],
)
def test_a_typo_gets_the_full_loaders_line(overrides):
    recipe = resolve_config_path("quickstart")
    with pytest.raises(ConfigError) as full:
        load_config(recipe, overrides)
    with pytest.raises(ConfigError) as fast:
        check_recipe_keys(recipe, overrides)
    assert str(fast.value) == str(full.value)


def test_valid_configs_pass_the_key_check():
    for name in ("quickstart", "orarl", "tgrpo", "longvt"):
        check_recipe_keys(
            resolve_config_path(name),
            ["eval.anything=1", "data.chat_template_kwargs={anything: 1}"],
        )


def test_videorl_train_reports_a_typo_without_importing_torch():
    script = (
        "import sys\n"
        "from videorl.cli import main\n"
        "sys.argv = ['videorl', 'train', 'quickstart', 'trainer.stpes=3']\n"
        "try:\n    main()\nexcept SystemExit as e:\n    code = e.code\n"
        "print(code, 'torch' in sys.modules, 'torchvision' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], check=True, capture_output=True, text=True
    )
    assert "config key 'trainer.stpes' is unknown; did you mean 'steps'" in done.stdout
    assert done.stdout.splitlines()[-1] == "2 False False"
