"""The estimator registry and grpo / dr_grpo / rloo (docs/methods.md#advantage-estimators)."""

import math

import pytest
import torch
from tests.algorithms.tensors import close, ids, t

from videorl.algorithms import ADVANTAGES, AdvantageResult, get_estimator, register_advantage
from videorl.algorithms.advantages import dr_grpo, grpo, rloo
from videorl.algorithms.groups import group_stats
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
        with pytest.raises(ConfigError, match="already registered"):
            register_advantage("test_constant", kind="outcome")(lambda *a, **k: None)
    finally:
        del ADVANTAGES["test_constant"]


def test_register_rejects_unknown_kind():
    with pytest.raises(ConfigError, match="kind='row'"):
        register_advantage("x", kind="row")


def test_make_config_validates_keys():
    assert get_estimator("grpo").make_config({"std_eps": 1e-4}).std_eps == 1e-4
    with pytest.raises(ConfigError, match="std_epsilon"):
        get_estimator("grpo").make_config({"std_epsilon": 1e-4})
    with pytest.raises(ConfigError, match="takes no parameters"):
        get_estimator("dr_grpo").make_config({"std_eps": 1e-4})
    with pytest.raises(ConfigError, match="std_eps=0"):
        get_estimator("grpo").make_config({"std_eps": 0})
    orarl = get_estimator("orarl").make_config({"gain": {"gamma": 0.5}})
    assert orarl.gain.gamma == 0.5 and orarl.anchor.beta == 2.0
