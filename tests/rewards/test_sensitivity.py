"""TaRO temporal-sensitivity reward (docs/methods.md#temporal-sensitivity-reward): boundary shuffle
and per-row bonus."""

import math

import pytest
import torch

from videorl.rewards import RewardConfig, SensitivityConfig
from videorl.rewards.sensitivity import (
    boundary_shuffle,
    sensitivity_bonus,
    shuffle_seed,
    token_mean_logp_gap,
)

STAMPS = [i * 0.5 for i in range(40)]  # 2 fps over 20 s


def moved(perm):
    return {i for i, p in enumerate(perm) if p != i}


def test_shuffle_permutes_only_frames_near_each_boundary():
    perm = boundary_shuffle(STAMPS, (5.0, 15.0), radius=1.0, seed=7)
    assert sorted(perm) == list(range(len(STAMPS)))
    near_start = {i for i, t in enumerate(STAMPS) if abs(t - 5.0) <= 1.0}
    near_end = {i for i, t in enumerate(STAMPS) if abs(t - 15.0) <= 1.0}
    assert moved(perm) == near_start | near_end  # every frame near a boundary moves
    assert {perm[i] for i in near_start} == near_start
    assert {perm[i] for i in near_end} == near_end


def test_shuffle_is_seeded():
    a = boundary_shuffle(STAMPS, (5.0, 15.0), 3.0, seed=1)
    assert a == boundary_shuffle(STAMPS, (5.0, 15.0), 3.0, seed=1)
    assert any(boundary_shuffle(STAMPS, (5.0, 15.0), 3.0, seed=s) != a for s in range(2, 6))


def test_overlapping_boundaries_split_by_nearest():
    perm = boundary_shuffle(STAMPS, (5.0, 6.0), radius=3.0, seed=3)
    start_set = {
        i for i, t in enumerate(STAMPS) if abs(t - 5.0) <= 3.0 and abs(t - 5.0) <= abs(t - 6.0)
    }
    end_set = {i for i, t in enumerate(STAMPS) if abs(t - 6.0) <= 3.0} - start_set
    assert {perm[i] for i in start_set} == start_set
    assert {perm[i] for i in end_set} == end_set


def test_shuffle_edge_cases():
    assert boundary_shuffle([], (1.0, 2.0), 3.0, 0) == []
    assert boundary_shuffle([0.0, 10.0], (5.0, 6.0), 1.0, 0) == [0, 1]  # no frame near
    assert boundary_shuffle([5.0, 10.0], (5.0, 20.0), 1.0, 0) == [0, 1]  # one frame cannot move
    with pytest.raises(ValueError, match="radius"):
        boundary_shuffle(STAMPS, (1.0, 2.0), -1.0, 0)


def test_shuffle_seed_is_stable_and_distinct():
    assert shuffle_seed(3, 4) == 12292905831637230108  # fixed across runs, hosts and ranks
    assert shuffle_seed(3, 4, base_seed=1) == 18411921737344601607
    assert len({shuffle_seed(step, row) for step in range(5) for row in range(5)}) == 25


def test_token_mean_logp_gap():
    orig = torch.tensor([[-1.0, -2.0, -3.0], [-1.0, -1.0, -1.0], [0.0, 0.0, 0.0]])
    shuf = torch.tensor([[-2.0, -2.5, -9.0], [-3.0, -1.0, -1.0], [0.0, 0.0, 0.0]])
    mask = torch.tensor([[1, 1, 0], [1, 1, 1], [0, 0, 0]])
    assert torch.allclose(token_mean_logp_gap(orig, shuf, mask), torch.tensor([0.75, 2 / 3, 0.0]))
    orig[0, 2] = shuf[0, 2] = -math.inf  # padding
    assert token_mean_logp_gap(orig, shuf, mask)[0] == pytest.approx(0.75)


D = torch.tensor([0.5, 0.1, 0.3, 0.9])
GROUPS = torch.tensor([0, 0, 1, 1])
TIOU = torch.tensor([0.8, 0.8, 0.8, 0.5])


def test_bonus_group_mean_and_gate():
    # group means 0.3 and 0.6; row 3 beats its mean but fails the gate (0.5 < 0.7)
    bonus = sensitivity_bonus(D, GROUPS, TIOU, SensitivityConfig())
    assert torch.allclose(bonus, torch.tensor([0.3, 0.0, 0.0, 0.0]))


def test_reward_config_is_accepted():
    config = RewardConfig(num_workers=1, sensitivity=SensitivityConfig(alpha=0.5))
    assert sensitivity_bonus(D, GROUPS, TIOU, config).tolist() == [0.5, 0.0, 0.0, 0.0]


def test_each_row_keeps_its_own_d():
    # the reference bug shared one value per group, giving both rows of a group the same bonus
    bonus = sensitivity_bonus(D, GROUPS, torch.ones(4), SensitivityConfig(alpha=1.0))
    assert bonus.tolist() == [1.0, 0.0, 0.0, 1.0]


def test_bonus_margin_constant_threshold_and_gate_boundary():
    assert sensitivity_bonus(D, GROUPS, TIOU, SensitivityConfig(margin=0.25)).tolist() == [0.0] * 4
    constant = sensitivity_bonus(D, GROUPS, TIOU, SensitivityConfig(threshold=0.2))
    assert torch.allclose(constant, torch.tensor([0.3, 0.0, 0.3, 0.0]))
    at_gate = sensitivity_bonus(D, GROUPS, torch.full((4,), 0.7), SensitivityConfig(gate=0.7))
    assert at_gate[0] == pytest.approx(0.3)


def test_non_finite_d_gets_nothing_and_leaves_the_mean():
    d = torch.tensor([0.4, math.nan, 0.2, math.inf])
    bonus = sensitivity_bonus(
        d, torch.tensor([0, 0, 0, 0]), torch.ones(4), SensitivityConfig(alpha=1.0)
    )
    assert bonus.tolist() == [1.0, 0.0, 0.0, 0.0]  # mean of the finite d = 0.3


def test_bonus_keeps_dtype_device_and_empty_batches():
    empty = sensitivity_bonus(
        torch.zeros(0), torch.zeros(0, dtype=torch.long), torch.zeros(0), SensitivityConfig()
    )
    assert empty.shape == (0,)
    half = sensitivity_bonus(D.to(torch.bfloat16), GROUPS, TIOU, SensitivityConfig())
    assert half.dtype == torch.float32
