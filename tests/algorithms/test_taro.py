"""TaRO off-policy row transforms and the prefix curriculum
(docs/methods.md#taro-constructed-rows)."""

import math

import pytest
import torch

from videorl.algorithms.taro import (
    CurriculumConfig,
    OffPolicyConfig,
    constructed_probability,
    draw_constructed,
    off_policy_advantages,
)
from videorl.config import load_config
from videorl.errors import ConfigError

F64 = torch.float64
ADVANTAGES = torch.tensor([0.5, -0.4, 0.0, 0.8, 0.5, -0.2], dtype=F64)
GROUPS = torch.tensor([0, 0, 0, 1, 1, 1])
OFF = torch.tensor([True, True, True, False, True, True])


def transformed(mode, **kwargs):
    return off_policy_advantages(ADVANTAGES, GROUPS, OFF, OffPolicyConfig(mode=mode, **kwargs))


def close(actual, expected):
    torch.testing.assert_close(actual, torch.tensor(expected, dtype=F64), atol=1e-12, rtol=0)


def test_mask_is_the_default_and_keeps_on_policy_rows():
    close(off_policy_advantages(ADVANTAGES, GROUPS, OFF), [0.5, 0.0, 0.0, 0.8, 0.5, 0.0])


def test_clone():
    close(transformed("clone"), [1.0, 0.0, 0.0, 0.8, 1.0, 0.0])


def test_awr_and_its_cap():
    close(
        transformed("awr", awr_beta=0.5),
        [math.exp(1.0), math.exp(-0.8), 1.0, 0.8, math.exp(1.0), math.exp(-0.4)],
    )
    huge = off_policy_advantages(
        torch.tensor([1e4], dtype=F64),
        torch.tensor([0]),
        torch.tensor([True]),
        OffPolicyConfig(mode="awr"),
    )
    assert float(huge) == 20.0


def test_raft_marks_the_best_row_of_each_group():
    # group 0's best is row 0 (off-policy); group 1's best is row 3, which is on-policy,
    # so its constructed rows 4 and 5 get 0.
    close(transformed("raft"), [1.0, 0.0, 0.0, 0.8, 0.0, 0.0])


def test_raft_ties_go_to_the_lower_row_and_flat_groups_have_no_best():
    advantages = torch.tensor([0.3, 0.3, -0.6, 0.0, 0.0], dtype=F64)
    result = off_policy_advantages(
        advantages,
        torch.tensor([2, 2, 2, 7, 7]),
        torch.ones(5, dtype=torch.bool),
        OffPolicyConfig(mode="raft"),
    )
    close(result, [1.0, 0.0, 0.0, 0.0, 0.0])


def test_off_policy_config_validation():
    with pytest.raises(ConfigError, match="algorithm.constructed.off_policy.mode.*'bc'"):
        load_config(None, ["algorithm.constructed.off_policy.mode=bc"])
    with pytest.raises(ConfigError, match="awr_beta=0"):
        OffPolicyConfig(mode="awr", awr_beta=0)


def test_hard_curriculum_switches_after_warmup_epochs():
    config = CurriculumConfig(schedule="hard", warmup_epochs=2)
    assert [constructed_probability(s, e, config) for s, e in [(0, 0), (99, 1), (100, 2)]] == [
        1.0,
        1.0,
        0.0,
    ]


def test_linear_curriculum_decays_to_zero():
    config = CurriculumConfig(schedule="linear", warmup_steps=10)
    probabilities = [constructed_probability(step, 0, config) for step in (0, 5, 10, 20)]
    assert probabilities == [1.0, 0.5, 0.0, 0.0]


def test_curriculum_config_validation():
    with pytest.raises(ConfigError, match="warmup_steps > 0"):
        CurriculumConfig(schedule="linear")
    with pytest.raises(ConfigError, match="schedule='cosine'"):
        CurriculumConfig(schedule="cosine")  # type: ignore[arg-type]  # a bad value on purpose


def test_rows_draw_independently_and_reproducibly():
    first = draw_constructed(4000, 0.25, torch.Generator().manual_seed(3))
    again = draw_constructed(4000, 0.25, torch.Generator().manual_seed(3))
    assert torch.equal(first, again)
    assert 0.22 < float(first.double().mean()) < 0.28
    assert not draw_constructed(100, 0.0, torch.Generator()).any()
    assert draw_constructed(100, 1.0, torch.Generator()).all()
    with pytest.raises(ValueError):
        draw_constructed(3, 1.5, torch.Generator())


def test_exact_taro_formulas():
    """TaRO's core_algos: AWR uncapped; RAFT marks every row at its group's max, ties and
    all-equal groups included (rows 0 and 1 tie at 0.0, a flat group)."""
    big = torch.tensor([5.0, -1.0], dtype=F64)
    groups, off = torch.tensor([0, 0]), torch.tensor([True, True])
    awr = off_policy_advantages(big, groups, off, OffPolicyConfig(mode="awr", exact=True))
    close(awr, [math.exp(5.0), math.exp(-1.0)])
    capped = off_policy_advantages(big, groups, off, OffPolicyConfig(mode="awr"))
    assert float(capped[0]) == 20.0
    flat = torch.tensor([0.0, 0.0, 0.3, 0.3, -0.6], dtype=F64)
    flat_groups = torch.tensor([0, 0, 1, 1, 1])
    every = torch.ones(5, dtype=torch.bool)
    exact = off_policy_advantages(
        flat, flat_groups, every, OffPolicyConfig(mode="raft", exact=True)
    )
    close(exact, [1.0, 1.0, 1.0, 1.0, 0.0])
    ours = off_policy_advantages(flat, flat_groups, every, OffPolicyConfig(mode="raft"))
    close(ours, [0.0, 0.0, 1.0, 0.0, 0.0])
