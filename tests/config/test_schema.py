"""Config: load, override, and each error class's one-line message."""

from __future__ import annotations

import subprocess
import sys

import pytest

from videorl.api import resolve_config_path
from videorl.config import load_config
from videorl.errors import ConfigError

QUICKSTART = resolve_config_path("quickstart")


def test_load_and_override():
    config = load_config(
        QUICKSTART, ["rollout.n=4", "algorithm.pruning.neg_quota=0", "optim.lr=0.5"]
    )
    assert config.rollout.n == 4
    assert config.optim.lr == 0.5
    assert config.algorithm.estimator == "orarl"
    assert config.rows_kept_per_group() == 2


@pytest.mark.parametrize(
    "override, message",
    [
        ("rollout.nn=3", "config key 'rollout.nn' is unknown; did you mean 'n'"),
        ("rollout.n=eight", "config key 'rollout.n' = 'eight' has the wrong type: expected int"),
        (
            "optim.schedule=linear",
            "config key 'optim.schedule' = 'linear' is not allowed; allowed values: 'constant', 'cosine'",
        ),
        ("algorithm.pruning.pos_quota=2", "needs pos_quota + neg_quota + 1 == 4 (got 2 + 2 + 1)"),
        ("algorithm.estimator=grpoo", "did you mean"),
        ("data.families=[tempo]", "unknown task family 'tempo'"),
        ("optim.mini_batches=5", "optim.mini_batches=5 must divide the rows per step"),
        ("rollout=3", "config key 'rollout' must be a section"),
    ],
)
def test_errors_are_one_line_and_name_the_key(override, message):
    with pytest.raises(ConfigError) as err:
        load_config(QUICKSTART, [override])
    text = str(err.value)
    assert message in text
    assert "\n" not in text


@pytest.mark.parametrize(
    "override, message",
    [
        ("algorithm.distill.topk=-1", "algorithm.distill.topk=-1 must be >= 0"),
        ("algorithm.grpo.std_eps=0", "algorithm.grpo.std_eps=0.0 must be > 0"),
        ("algorithm.orarl.gain.min_gain=9", "algorithm.orarl.gain.min_gain=9.0 and max_gain="),
        ("algorithm.loss.dual_clip=0.5", "algorithm.loss.dual_clip=0.5 must be > 1"),
        ("algorithm.dynamic_sampling.max_draws=-1", "algorithm.dynamic_sampling.max_draws=-1"),
        ("algorithm.temporal_contrast.bonus=-1", "algorithm.temporal_contrast.bonus=-1.0"),
        (
            "algorithm.constructed.curriculum.warmup_steps=-1",
            "algorithm.constructed.curriculum.warmup_steps=-1 must be >= 0",
        ),
        ("algorithm.pruning.correction.eps=0", "algorithm.pruning.correction.eps=0.0 must be > 0"),
        ("reward.length_band.max=1", "reward.length_band.max=1 is below min=320"),
        ("reward.sensitivity.alpha=-1", "reward.sensitivity.alpha=-1.0 is invalid"),
        ("reward.timeout_s=0", "reward.timeout_s=0.0 is invalid"),
        ("reward.plugins={nope: 'm:f'}", "reward.plugins: unknown task family 'nope'"),
    ],
)
def test_sections_name_their_own_keys_and_the_loader_places_them(override, message):
    """Algorithm and reward sections write their keys relative to themselves (`topk=-1`);
    the loader puts the section's path in front, so the line names the full key."""
    with pytest.raises(ConfigError) as err:
        load_config(None, [override])
    assert str(err.value).startswith(message.split(" ")[0]), str(err.value)
    assert message in str(err.value)


def test_missing_file_and_bad_override_syntax(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "nope.yaml")
    with pytest.raises(ConfigError, match="must look like key.sub=value"):
        load_config(QUICKSTART, ["rollout.n"])


def test_cli_dry_run_prints_the_plan():
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "videorl",
            "train",
            "quickstart",
            "--dry-run",
            "rollout.n=4",
            "algorithm.pruning.neg_quota=0",
        ],
        capture_output=True,
        check=False,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "Step plan" in result.stdout
    assert "rows kept after pruning" in result.stdout
    assert "n: 4" in result.stdout


def test_cli_config_error_exits_2_with_one_line():
    result = subprocess.run(
        [sys.executable, "-m", "videorl", "train", "quickstart", "--dry-run", "rollout.nn=4"],
        capture_output=True,
        check=False,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert result.stdout.strip().count("\n") == 0
    assert "rollout.nn" in result.stdout


def test_every_estimator_reads_its_config_from_yaml_through_the_registry():
    """`algorithm.grpo` reaches GRPO (std_eps changes its advantages); a plugin estimator's
    `algorithm.params` is built by its registered config class; unknown keys are errors."""
    from dataclasses import dataclass

    import torch

    from videorl.algorithms.advantages import ADVANTAGES, AdvantageResult, register_advantage

    rewards, groups = torch.tensor([1.0, 0.0]), torch.tensor([0, 0])
    wide = load_config(None, ["algorithm.grpo.std_eps=1.0"]).algorithm
    assert wide.estimator_config.std_eps == 1.0
    advantage = ADVANTAGES["grpo"](rewards, groups, config=wide.estimator_config).advantages
    # std of [1, 0] is 0.7071: (1 - 0.5) / (0.7071 + 1.0) = 0.2929
    assert abs(float(advantage[0]) - 0.5 / (2**-0.5 + 1.0)) < 1e-6

    @dataclass(frozen=True)
    class ShiftConfig:
        shift: float = 0.0

    @register_advantage("test_shift", kind="outcome", config_cls=ShiftConfig)
    def shift(rewards, group_ids, *, is_annotation=None, config=None):
        return AdvantageResult(rewards + config.shift, {})

    try:
        algo = load_config(
            None, ["algorithm.estimator=test_shift", "algorithm.params.shift=0.5"]
        ).algorithm
        assert algo.estimator_config == ShiftConfig(shift=0.5)
        with pytest.raises(ConfigError, match="has no parameter"):
            load_config(None, ["algorithm.estimator=test_shift", "algorithm.params.size=1"])
        with pytest.raises(ConfigError, match="reads algorithm.grpo"):
            load_config(None, ["algorithm.params.shift=1"])
    finally:
        del ADVANTAGES["test_shift"]


def test_a_run_config_with_the_retired_eval_section_still_loads(tmp_path):
    """Runs written before `eval:` was dropped from the config tree keep loading."""
    path = tmp_path / "config.yaml"
    path.write_text("eval:\n  batch_size: 8\nrollout:\n  n: 4\n")
    assert load_config(path).rollout.n == 4


def test_every_choice_of_every_key_survives_a_command_line_override():
    """YAML reads `off`, `on`, `yes` and `no` as booleans: no choice may be such a word."""
    from videorl.config.reference import all_fields

    choices = [(f.key, c) for f in all_fields() for c in f.choices if isinstance(c, str)]
    assert len(choices) > 50
    refused = []
    for key, choice in choices:
        try:
            load_config(QUICKSTART, [f"{key}={choice}"])
        except ConfigError as err:  # another key's rule may refuse the pairing, not the value
            if "is not allowed" in str(err):
                refused.append(f"{key}={choice}: {err}")
    assert not refused
