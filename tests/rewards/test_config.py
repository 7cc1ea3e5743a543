"""RewardConfig validation: errors name the key, the value and the fix, at load time
(`from_dict` builds the section as the config loader does, so errors carry `reward.`)."""

import pytest

from videorl.config import load_config
from videorl.errors import ConfigError
from videorl.rewards import RewardConfig, SensitivityConfig


def test_defaults():
    config = RewardConfig()
    assert config.tg_shaping == "iou" and not config.think_required and config.timeout_s == 5.0
    assert config.workers >= 1
    assert RewardConfig(num_workers=3).workers == 3
    assert config.sensitivity == SensitivityConfig(
        enabled=False, alpha=0.3, margin=0.0, gate=0.7, radius=3.0
    )


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"tg_shaping": "giou"}, ["reward.tg_shaping", "giou", "iou_v2"]),
        ({"num_workers": -2}, ["reward.num_workers", "-2"]),
        ({"timeout_s": 0}, ["reward.timeout_s", "0"]),
        ({"timeout_s": float("nan")}, ["reward.timeout_s"]),
        ({"plugin_mode": "merge"}, ["reward.plugin_mode", "merge", "extend"]),
        ({"plugin_weight": 1.5}, ["reward.plugin_weight", "1.5"]),
        ({"think_required": "yes"}, ["reward.think_required"]),
    ],
)
def test_invalid_values(kwargs, words):
    with pytest.raises(ConfigError) as info:
        RewardConfig.from_dict(kwargs)
    for word in words:
        assert word in str(info.value)


def test_a_section_given_as_a_mapping_needs_from_dict():
    with pytest.raises(ConfigError, match="sensitivity=.*give a SensitivityConfig.*from_dict"):
        RewardConfig(sensitivity={"alpha": 1})  # type: ignore[arg-type]  # a mapping, as a YAML file gives


@pytest.mark.parametrize(
    "kwargs, key",
    [
        ({"alpha": -0.1}, "alpha"),
        ({"gate": 1.1}, "gate"),
        ({"radius": 0}, "radius"),
        ({"threshold": "median"}, "threshold"),
        ({"threshold": float("inf")}, "threshold"),
        ({"enabled": 1}, "enabled"),
    ],
)
def test_invalid_sensitivity(kwargs, key):
    with pytest.raises(ConfigError, match=f"reward.sensitivity.{key}"):
        RewardConfig.from_dict({"sensitivity": kwargs})


def test_constant_threshold_allowed():
    assert SensitivityConfig(threshold=0.1).threshold == 0.1
    loaded = load_config(None, ["reward.sensitivity.threshold=-0.5"])
    assert loaded.reward.sensitivity.threshold == -0.5


def test_unknown_family_in_plugins_is_a_load_time_error(plugin_module):
    with pytest.raises(
        ConfigError, match="reward.plugins: unknown task family 'temporal_grouding'.*did you mean"
    ):
        RewardConfig.from_dict({"plugins": {"temporal_grouding": f"{plugin_module}:quarter"}})


def test_plugin_family_aliases_are_canonicalised(plugin_module):
    config = RewardConfig(plugins={"tg": f"{plugin_module}:quarter"})
    assert config.plugins == {"temporal_grounding": f"{plugin_module}:quarter"}


@pytest.mark.parametrize(
    "spec, words",
    [
        ("no_colon", ["module:function"]),
        ("not_a_module_xyz:f", ["cannot import", "not_a_module_xyz"]),
        ("{module}:missing", ["no callable", "missing"]),
    ],
)
def test_bad_plugin_specs(plugin_module, spec, words):
    with pytest.raises(ConfigError) as info:
        RewardConfig(plugins={"qa": spec.format(module=plugin_module)})
    for word in words:
        assert word in str(info.value)


def test_from_dict():
    config = RewardConfig.from_dict(
        {"tg_shaping": "iou_v2", "sensitivity": {"enabled": True, "gate": 0.5}}
    )
    assert (
        config.tg_shaping == "iou_v2"
        and config.sensitivity.enabled
        and config.sensitivity.gate == 0.5
    )
    with pytest.raises(ConfigError, match="'reward.tg_shape' is unknown.*valid keys in reward"):
        RewardConfig.from_dict({"tg_shape": "iou"})
    with pytest.raises(ConfigError, match="'reward.sensitivity.beta' is unknown"):
        RewardConfig.from_dict({"sensitivity": {"beta": 1}})


def test_one_plugin_per_family(plugin_module):
    with pytest.raises(ConfigError, match="already has a plug-in"):
        RewardConfig(
            plugins={
                "tg": f"{plugin_module}:quarter",
                "temporal_grounding": f"{plugin_module}:broken",
            }
        )
