"""T-GRPO's temporal contrast bonus, worked by hand against Video-R1's rule
(tulerfeng/Video-R1 src/r1-v/src/open_r1/trainer/grpo_trainer.py, `compute_loss`):
`if acc_mean >= 0.8 * shuffled_acc_mean: acc[acc > 0.1] += 0.3`, per prompt."""

from __future__ import annotations

import math
import re

import pytest
import torch

from videorl.algorithms.tgrpo import (
    TemporalContrastConfig,
    frame_permutation,
    group_accuracy,
    temporal_contrast_bonus,
)
from videorl.config import load_config
from videorl.errors import ConfigError

PAPER = TemporalContrastConfig(enabled=True)  # mu 0.8, alpha 0.3, tau 0.1
NAN = float("nan")


def _bonus(accuracy, group_ids, shuffled_acc, config=PAPER):
    accuracy = torch.tensor(accuracy)
    group_ids = torch.tensor(group_ids)
    ordered = group_accuracy(accuracy, group_ids, len(shuffled_acc))
    return ordered, temporal_contrast_bonus(
        accuracy, group_ids, ordered, torch.tensor(shuffled_acc), config
    )


def test_correct_rows_of_a_group_that_beats_its_shuffled_group_get_alpha():
    # group 0: p = (1 + 0 + 1 + 0.05) / 4 = 0.5125 >= 0.8 * 0.25 = 0.2 -> rows with acc > 0.1
    #          (rows 0 and 2; 0.05 is not correct) get 0.3
    # group 1: p = (0.5 + 0) / 2 = 0.25 < 0.8 * 1.0 -> nothing
    # group 2: an image prompt (no shuffled group, p~ = NaN) -> nothing, though correct
    ordered, bonus = _bonus(
        [1.0, 0.0, 1.0, 0.05, 0.5, 0.0, 1.0, 1.0],
        [0, 0, 0, 0, 1, 1, 2, 2],
        [0.25, 1.0, NAN],
    )
    torch.testing.assert_close(ordered, torch.tensor([0.5125, 0.25, 1.0]))
    torch.testing.assert_close(bonus, torch.tensor([0.3, 0, 0.3, 0, 0, 0, 0, 0]))


def test_the_inequality_is_not_strict_and_accuracy_is_a_mean_score():
    # p = (0.8 + 0) / 2 = 0.4 = 0.8 * 0.5 -> passes (Video-R1: >=); row 1 (acc 0) gets none
    _, bonus = _bonus([0.8, 0.0], [0, 0], [0.5])
    torch.testing.assert_close(bonus, torch.tensor([0.3, 0.0]))
    # both groups all wrong: 0 >= 0.8 * 0 holds, but no row is correct
    _, bonus = _bonus([0.0, 0.1], [0, 0], [0.0])
    torch.testing.assert_close(bonus, torch.tensor([0.0, 0.0]))  # 0.1 is not > 0.1


def test_margin_bonus_and_threshold_are_the_configured_ones():
    config = TemporalContrastConfig(enabled=True, margin=1.0, bonus=0.5, correct_threshold=0.6)
    # p = 0.75 >= 1.0 * 0.7 -> rows with acc > 0.6 (row 0: 1.0) get 0.5; row 1 (0.5) none
    _, bonus = _bonus([1.0, 0.5], [0, 0], [0.7], config)
    torch.testing.assert_close(bonus, torch.tensor([0.5, 0.0]))
    _, bonus = _bonus([1.0, 0.5], [0, 0], [0.8], config)  # 0.75 < 0.8: none
    torch.testing.assert_close(bonus, torch.tensor([0.0, 0.0]))


def test_shuffled_rollouts_default_to_half_the_group():
    assert PAPER.shuffled_rollouts(8) == 4  # num_generations // 2
    assert PAPER.shuffled_rollouts(1) == 1
    assert TemporalContrastConfig(n_shuffled=3).shuffled_rollouts(8) == 3


def test_frame_permutation_is_seeded_and_never_the_identity():
    for frames in (2, 3, 16):
        for seed in range(20):
            perm = frame_permutation(frames, seed)
            assert sorted(perm) == list(range(frames))
            assert perm != list(range(frames))
            assert perm == frame_permutation(frames, seed)
    assert frame_permutation(1, 0) == [0]
    assert frame_permutation(16, 1) != frame_permutation(16, 2)


@pytest.mark.parametrize(
    "override, message",
    [
        ("margin=-0.1", "algorithm.temporal_contrast.margin=-0.1 must be"),
        ("margin=.nan", "algorithm.temporal_contrast.margin' = nan must be a finite"),
        ("bonus=-1", "algorithm.temporal_contrast.bonus=-1.0 must be"),
        ("n_shuffled=0", "algorithm.temporal_contrast.n_shuffled=0 must be >= 1"),
        ("correct_threshold=1.5", "algorithm.temporal_contrast.correct_threshold=1.5 must be"),
    ],
)
def test_bad_settings_are_one_line_errors(override, message):
    with pytest.raises(ConfigError, match=re.escape(message)) as info:
        load_config(None, [f"algorithm.temporal_contrast.{override}"])
    assert "\n" not in str(info.value)


def test_group_accuracy_of_an_empty_group_is_zero():
    acc = group_accuracy(torch.tensor([1.0, 0.5]), torch.tensor([0, 0]), 2)
    assert acc.tolist() == [0.75, 0.0] and not math.isnan(acc[1])
