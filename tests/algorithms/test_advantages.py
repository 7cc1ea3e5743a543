"""The estimator registry and grpo / dr_grpo / rloo (docs/methods.md#advantage-estimators)."""

import math

import pytest
import torch
from tests.algorithms.tensors import close, flags, ids, t

from videorl.algorithms import ADVANTAGES, AdvantageResult, get_estimator, register_advantage
from videorl.algorithms.advantages import GRPOConfig, dr_grpo, grpo, rloo
from videorl.algorithms.distill import grpd_scale
from videorl.algorithms.groups import group_stats
from videorl.algorithms.orarl import orarl_advantages
from videorl.errors import ConfigError


def test_worked_example_grpo_and_dr_grpo():
    rewards, groups = t([1, 0, 0, 1]), ids([0, 0, 0, 0])
    std = math.sqrt(1 / 3)
    assert abs(std - 0.5774) < 1e-4
    expected = 0.5 / (std + 1e-6)
    close(grpo(rewards, groups).advantages, [expected, -expected, -expected, expected])
    close(grpo(rewards, groups).advantages, [0.866, -0.866, -0.866, 0.866], atol=1e-3)
    close(dr_grpo(rewards, groups).advantages, [0.5, -0.5, -0.5, 0.5])


def test_rloo_leaves_the_row_out():
    close(rloo(t([1, 0, 0, 1]), ids([0] * 4)).advantages, [2 / 3, -2 / 3, -2 / 3, 2 / 3])
    close(rloo(t([0.3, 0.9, 0.0]), ids([0] * 3)).advantages, [-0.15, 0.75, -0.6])


@pytest.mark.parametrize("estimator", [grpo, dr_grpo, rloo])
def test_non_contiguous_groups_match_contiguous(estimator):
    rewards = t([0.1, 0.7, 0.9, 0.3, 0.2, 0.8])
    interleaved = estimator(rewards, ids([4, 9, 4, 9, 4, 9])).advantages
    first = estimator(rewards[[0, 2, 4]], ids([0, 0, 0])).advantages
    second = estimator(rewards[[1, 3, 5]], ids([1, 1, 1])).advantages
    torch.testing.assert_close(interleaved[[0, 2, 4]], first)
    torch.testing.assert_close(interleaved[[1, 3, 5]], second)


@pytest.mark.parametrize("estimator", [grpo, dr_grpo, rloo])
def test_zero_variance_and_single_row_groups_give_finite_zeros(estimator):
    rewards = t([0.5, 0.5, 0.5, 1.0, 0.0])
    result = estimator(rewards, ids([0, 0, 0, 1, 2]))
    assert torch.isfinite(result.advantages).all()
    close(result.advantages, [0, 0, 0, 0, 0])
    assert all(math.isfinite(v) for v in result.metrics.values())


@pytest.mark.parametrize("estimator", [grpo, dr_grpo, rloo, orarl_advantages])
def test_equal_float32_rewards_give_exactly_zero(estimator):
    # The float32 mean of 7 x 0.7 is 0.69999993 and that of 8 x 0.1 0.10000001: before
    # max == min counted as zero variance, GRPO gave these groups +0.056 and -0.0074.
    rewards = torch.tensor([0.7] * 7 + [0.1] * 8, dtype=torch.float32)
    naive = (rewards[:7] - rewards[:7].sum() / 7) / (rewards[:7].std() + 1e-6)
    assert abs(float(naive[0]) - 0.056) < 1e-3  # the flaw this test pins away
    result = estimator(rewards, ids([0] * 7 + [1] * 8))
    assert result.advantages.tolist() == [0.0] * 15
    if estimator is not orarl_advantages:
        name = estimator.__name__
        assert result.metrics[f"{name}/zero_variance_groups"] == 2.0
        assert result.metrics[f"{name}/advantage_abs_max"] == 0.0


def test_equal_rewards_beside_annotation_row_and_grpd_scale_are_exact():
    rewards = torch.tensor([0.7, 0.7, 0.7, 1.0], dtype=torch.float32)
    annotation = flags([False, False, False, True])
    stats = group_stats(rewards, ids([0] * 4), include=~annotation)
    assert float(stats.mean[0]) == float(rewards[0]) and float(stats.std[0]) == 0.0
    assert bool(stats.uniform[0])
    policy = orarl_advantages(rewards, ids([0] * 4), is_annotation=annotation).advantages[:3]
    assert policy.tolist() == [0.0] * 3
    scale = grpd_scale(rewards[:3], ids([0] * 3), group_std=True, baseline=0.1)
    assert scale.tolist() == [pytest.approx(0.1)] * 3 and float(scale[0]) == float(scale[1])


def test_zero_variance_metric_counts_groups_of_two_or_more():
    rewards = t([0.3, 0.3, 1.0, 0.0, 0.5])
    metrics = grpo(rewards, ids([0, 0, 1, 1, 2])).metrics
    assert metrics["grpo/zero_variance_groups"] == 1.0
    assert metrics["grpo/single_row_groups"] == 1.0


def test_single_row_groups_zero_or_verl():
    # verl (core_algos.py): a one-row group has mean 0 and std 1, so GRPO gives r / (1 + eps)
    # and Dr.GRPO r; its RLOO leaves the score as it is (r). videorl's default gives 0.
    rewards, groups = t([0.8, 1.0, 0.0]), ids([0, 1, 1])
    verl = GRPOConfig(single_row="verl")
    for estimator in (grpo, dr_grpo, rloo):
        assert float(estimator(rewards, groups).advantages[0]) == 0.0
    close(grpo(rewards, groups, config=verl).advantages[:1], [0.8 / (1 + 1e-6)])
    close(dr_grpo(rewards, groups, config=verl).advantages, [0.8, 0.5, -0.5])
    close(rloo(rewards, groups, config=verl).advantages, [0.8, 1.0, -1.0])
    with pytest.raises(ConfigError, match="single_row='first'"):
        GRPOConfig(single_row="first")  # type: ignore[arg-type]  # a bad value on purpose


def test_empty_batch():
    result = grpo(t([]), ids([]))
    assert result.advantages.numel() == 0


def test_group_stats_unbiased_with_include_mask():
    stats = group_stats(t([1.0, 3.0, 100.0, 5.0]), ids([7, 7, 7, 2]), t([1, 1, 0, 1]).bool())
    # Dense index follows sorted ids: group 2 -> 0, group 7 -> 1.
    close(stats.mean, [5.0, 2.0])
    close(stats.std, [0.0, math.sqrt(2.0)])
    close(stats.count, [1.0, 2.0])
    assert stats.index.tolist() == [1, 1, 1, 0]


def test_group_stats_group_with_no_included_row():
    stats = group_stats(t([1.0, 2.0]), ids([0, 1]), torch.tensor([True, False]))
    close(stats.mean, [1.0, 0.0])
    close(stats.std, [0.0, 0.0])


def test_registry_holds_every_builtin_with_its_kind():
    kinds = {
        name: get_estimator(name).kind
        for name in ("grpo", "dr_grpo", "rloo", "orarl", "opd", "opdvr", "grpd")
    }
    assert kinds == {
        "grpo": "outcome",
        "dr_grpo": "outcome",
        "rloo": "outcome",
        "orarl": "outcome",
        "opd": "token",
        "opdvr": "token",
        "grpd": "token",
    }


def test_unknown_name_lists_valid_names():
    with pytest.raises(ConfigError) as error:
        get_estimator("grpoo")
    message = str(error.value)
    assert "'grpoo'" in message and "did you mean 'grpo'" in message
    for name in ("dr_grpo", "rloo", "orarl", "opd", "opdvr", "grpd"):
        assert name in message


def test_register_custom_estimator():
    @register_advantage("test_constant", kind="outcome")
    def constant(rewards, group_ids, *, is_annotation=None, config=None):
        return AdvantageResult(torch.ones_like(rewards), {})

    try:
        estimator = get_estimator("test_constant")
        assert estimator.kind == "outcome"
        close(estimator(t([0.0, 2.0]), ids([0, 0])).advantages, [1.0, 1.0])
        with pytest.raises(ConfigError, match="takes no parameters"):
            estimator.make_config({"std_eps": 1e-4})
        with pytest.raises(ConfigError, match="already registered"):
            register_advantage("test_constant", kind="outcome")(lambda *a, **k: None)  # type: ignore[arg-type]  # a stub estimator: registration is refused first
    finally:
        del ADVANTAGES["test_constant"]


def test_register_rejects_unknown_kind():
    with pytest.raises(ConfigError, match="kind='row'"):
        register_advantage("x", kind="row")  # type: ignore[arg-type]  # a bad value on purpose


def test_make_config_validates_keys():
    assert get_estimator("grpo").make_config({"std_eps": 1e-4}).std_eps == 1e-4
    with pytest.raises(ConfigError, match="std_epsilon"):
        get_estimator("grpo").make_config({"std_epsilon": 1e-4})
    assert get_estimator("rloo").make_config({"single_row": "verl"}).single_row == "verl"
    with pytest.raises(ConfigError, match="std_eps=0"):
        get_estimator("grpo").make_config({"std_eps": 0})
    orarl = get_estimator("orarl").make_config({"gain": {"gamma": 0.5}})
    assert orarl.gain.gamma == 0.5 and orarl.anchor.beta == 2.0
