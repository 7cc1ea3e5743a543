"""OraRL stages A-C and their composition (docs/methods.md#orarl)."""

import math

import pytest
import torch
from tests.algorithms.tensors import close, flags, ids, t

from videorl.algorithms import get_estimator
from videorl.algorithms.advantages import dr_grpo
from videorl.algorithms.orarl import (
    AnchorConfig,
    DirectionalGainConfig,
    OraRLConfig,
    annotation_anchor,
    directional_gain,
    on_policy_baseline,
    orarl_advantages,
)
from videorl.errors import ConfigError


def group(policy, annotation):
    """One group: policy rows then the annotation row."""
    rewards = t([*policy, annotation])
    n = len(policy)
    return rewards, ids([0] * (n + 1)), flags([False] * n + [True])


def test_worked_example_cap_binds():
    rewards, groups, annotation = group([0.2, 0.4, 0.6], 1.0)
    baseline = on_policy_baseline(rewards, groups, annotation)
    close(baseline.advantages, [-0.2, 0.0, 0.2, 0.0])
    gained = directional_gain(baseline.advantages, rewards, groups, annotation)
    assert abs(gained.metrics["orarl/gain_mean"] - 1.143169) < 1e-6
    close(gained.advantages[:3], [-0.209545, -0.009545, 0.219089])
    anchored = annotation_anchor(gained.advantages, rewards, groups, annotation)
    assert abs(anchored.metrics["orarl/anchor_weight_mean"] - 0.36) < 1e-6
    close(anchored.advantages, [-0.209545, -0.009545, 0.219089, 0.262907])
    assert anchored.metrics["orarl/anchor_capped_frac"] == 1.0
    # raw = scale * w = 0.72, visible once the cap cannot bind
    loose = annotation_anchor(
        gained.advantages, rewards, groups, annotation, AnchorConfig(cap_factor=100.0)
    )
    assert abs(float(loose.advantages[3]) - 0.72) < 1e-6
    close(
        orarl_advantages(rewards, groups, is_annotation=annotation).advantages,
        [-0.209545, -0.009545, 0.219089, 0.262907],
    )


def test_worked_example_raw_binds():
    rewards, groups, annotation = group([0.0, 0.5, 1.0], 1.0)
    result = orarl_advantages(rewards, groups, is_annotation=annotation)
    assert result.metrics["orarl/gain_max"] == 1.0
    assert abs(result.metrics["orarl/anchor_weight_mean"] - 0.25) < 1e-6
    close(result.advantages, [-0.5, 0.0, 0.5, 0.5])
    assert result.metrics["orarl/anchor_capped_frac"] == 0.0


def test_gain_keeps_policy_advantages_centred():
    rewards, groups, annotation = group([0.1, 0.2, 0.3, 0.9, 0.0], 1.0)
    result = orarl_advantages(rewards, groups, is_annotation=annotation)
    assert abs(float(result.advantages[:5].sum())) < 1e-12


def test_gamma_zero_turns_the_gain_off():
    rewards, groups, annotation = group([0.2, 0.4, 0.6], 1.0)
    config = OraRLConfig(gain=DirectionalGainConfig(gamma=0.0))
    result = orarl_advantages(rewards, groups, is_annotation=annotation, config=config)
    close(result.advantages[:3], [-0.2, 0.0, 0.2])


def test_gain_is_clipped_at_max():
    rewards, groups, annotation = group([0.5, 0.5001, 0.4999], 1.0)
    result = orarl_advantages(rewards, groups, is_annotation=annotation)
    assert result.metrics["orarl/gain_max"] == 4.0


def test_groups_without_annotation_reduce_to_dr_grpo():
    rewards, groups = t([0.1, 0.5, 0.9, 0.3]), ids([0, 0, 1, 1])
    result = orarl_advantages(rewards, groups, is_annotation=flags([False] * 4))
    torch.testing.assert_close(result.advantages, dr_grpo(rewards, groups).advantages)


def test_batch_of_interleaved_groups_equals_each_group_alone():
    a_rewards, a_groups, a_flags = group([0.2, 0.4, 0.6], 1.0)
    b_rewards, b_groups, b_flags = group([0.0, 0.5, 1.0], 0.8)
    order = [0, 4, 1, 5, 2, 6, 3, 7]
    rewards = torch.cat([a_rewards, b_rewards])[order]
    groups = torch.cat([a_groups + 3, b_groups + 1])[order]
    annotation = torch.cat([a_flags, b_flags])[order]
    joint = orarl_advantages(rewards, groups, is_annotation=annotation).advantages
    alone = torch.cat(
        [
            orarl_advantages(a_rewards, a_groups, is_annotation=a_flags).advantages,
            orarl_advantages(b_rewards, b_groups, is_annotation=b_flags).advantages,
        ]
    )[order]
    torch.testing.assert_close(joint, alone)


def test_zero_variance_policy_rows_get_the_minimum_cap():
    rewards, groups, annotation = group([0.0, 0.0, 0.0], 1.0)
    result = orarl_advantages(rewards, groups, is_annotation=annotation)
    assert torch.isfinite(result.advantages).all()
    close(result.advantages, [0.0, 0.0, 0.0, 0.05])


def test_wrong_annotation_gets_zero_anchor():
    rewards, groups, annotation = group([0.2, 0.6], 0.0)
    result = orarl_advantages(rewards, groups, is_annotation=annotation)
    assert float(result.advantages[2]) == 0.0
    negative = orarl_advantages(t([0.5, -1e-6]), ids([0, 0]), is_annotation=flags([False, True]))
    assert torch.isfinite(negative.advantages).all() and float(negative.advantages[1]) == 0.0


def test_single_row_and_annotation_only_groups():
    rewards = t([0.7, 1.0, 1.0])
    result = orarl_advantages(rewards, ids([0, 0, 1]), is_annotation=flags([False, True, True]))
    assert torch.isfinite(result.advantages).all()
    assert float(result.advantages[0]) == 0.0
    assert all(math.isfinite(v) for v in result.metrics.values())


def test_two_annotation_rows_in_a_group_are_an_error():
    with pytest.raises(ValueError, match="group 3 has 2 annotation rows"):
        orarl_advantages(t([0.1, 1.0, 1.0]), ids([3, 3, 3]), is_annotation=flags([0, 1, 1]))


def test_registered_as_orarl():
    rewards, groups, annotation = group([0.2, 0.4, 0.6], 1.0)
    estimator = get_estimator("orarl")
    result = estimator(rewards, groups, is_annotation=annotation, config=estimator.make_config())
    close(result.advantages[3:], [0.262907])


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: DirectionalGainConfig(gamma=-1), "gamma=-1"),
        (lambda: DirectionalGainConfig(min_gain=2, max_gain=1), "min_gain=2"),
        (lambda: AnchorConfig(cap_min=0.5, cap_max=0.1), "cap_min=0.5"),
        (lambda: AnchorConfig(beta=-2), "beta=-2"),
        (lambda: OraRLConfig(gain=3), "gain must be a mapping"),  # type: ignore[arg-type]  # a bad value on purpose
        (lambda: OraRLConfig(anchor={"scale": -1}), "scale=-1"),  # type: ignore[arg-type]  # a mapping, as a YAML file gives
    ],
)
def test_config_validation(make, match):
    with pytest.raises(ConfigError, match=match):
        make()
