"""OraRL stage D (sign-balanced selection) and stage E (post-selection correction),
docs/methods.md#orarl."""

import math

import pytest
import torch
from tests.algorithms.tensors import F64, flags, ids, t

from videorl.algorithms.orarl import orarl_advantages
from videorl.algorithms.selection import (
    CorrectionConfig,
    PruningConfig,
    SelectionReference,
    check_divisible,
    post_selection_correction,
    row_scores,
    select_rows,
    selection_reference,
)
from videorl.config import load_config
from videorl.errors import ConfigError

DEFAULT = PruningConfig(enabled=True)  # prune_ratio = 0.5, quotas 1 + 2 + 1
N = 8  # policy rows per group: k = 4


def kept_rows(advantages, annotation_row=None, groups=None, config=DEFAULT):
    n = len(advantages)
    annotation = [i == annotation_row for i in range(n)]
    result = select_rows(t(advantages), ids(groups or [0] * n), flags(annotation), config, N)
    return sorted(torch.nonzero(result.kept).flatten().tolist()), result.metrics


def test_k_and_quota_rule():
    assert DEFAULT.kept_rows(8) == 4
    assert PruningConfig(prune_ratio=0.9).kept_rows(20) == 2
    assert PruningConfig(prune_ratio=0.9).kept_rows(3) == 1


def test_quota_mismatch_names_the_numbers():
    with pytest.raises(ConfigError) as error:
        load_config(
            None,
            [
                "algorithm.annotation_rows=true",
                "algorithm.pruning.enabled=true",
                "rollout.n=8",
                "algorithm.pruning.neg_quota=1",
            ],
        )
    message = str(error.value)
    assert "rollout.n=8" in message and "algorithm.pruning.prune_ratio=0.5" in message
    assert "pos_quota + neg_quota + 1 == 4 (got 1 + 1 + 1)" in message


@pytest.mark.parametrize("kwargs", [{"prune_ratio": 1.0}, {"prune_ratio": -0.1}, {"pos_quota": -1}])
def test_invalid_selection_config(kwargs):
    with pytest.raises(ConfigError):
        PruningConfig(**kwargs)


def test_top_positive_and_negatives_plus_annotation():
    #            0     1     2     3     4     5     6     7    8 (annotation)
    scores = [0.1, -0.3, 0.5, -0.1, 0.2, -0.6, 0.0, -0.2, 0.05]
    kept, metrics = kept_rows(scores, annotation_row=8)
    assert kept == [1, 2, 5, 8]
    assert metrics["select/kept_pos"] == 1 and metrics["select/kept_neg"] == 2
    assert metrics["select/dropped_pos"] == 2 and metrics["select/dropped_neg"] == 2
    assert metrics["select/dropped_zero"] == 1
    assert metrics["select/fallback_pos_groups"] == 0
    assert abs(metrics["select/abs_adv_kept"] - (0.3 + 0.5 + 0.6) / 3) < 1e-12
    assert abs(metrics["select/abs_adv_dropped"] - (0.1 + 0.1 + 0.2 + 0.0 + 0.2) / 5) < 1e-12


def test_short_positive_bucket_fills_from_leftover_by_magnitude():
    scores = [-0.1, -0.4, -0.3, -0.2, 0.0, -0.05, 0.0, -0.15, 0.9]
    kept, metrics = kept_rows(scores, annotation_row=8)
    # neg quota takes 1 (0.4) and 2 (0.3); the empty positive slot takes 3 (0.2).
    assert kept == [1, 2, 3, 8]
    assert metrics["select/fallback_pos_groups"] == 1
    assert metrics["select/fallback_zero_groups"] == 0


def test_short_negative_bucket_fills_from_leftover_then_zero_rows():
    scores = [0.0, 0.3, 0.0, 0.1, -0.2, 0.0, 0.0, 0.0, 0.5]
    kept, metrics = kept_rows(scores, annotation_row=8)
    # pos quota takes 1; neg takes 4 only; one slot: leftover nonzero 3 (0.1).
    assert kept == [1, 3, 4, 8]
    assert metrics["select/fallback_neg_groups"] == 1
    scores = [0.0, 0.3, 0.0, 0.0, -0.2, 0.0, 0.0, 0.0, 0.5]
    kept, metrics = kept_rows(scores, annotation_row=8)
    # no leftover nonzero row: the first zero row in row order.
    assert kept == [0, 1, 4, 8]
    assert metrics["select/fallback_zero_groups"] == 1


def test_all_zero_group_keeps_first_rows_in_order():
    kept, metrics = kept_rows([0.0] * 8 + [0.3], annotation_row=8)
    assert kept == [0, 1, 2, 8]
    assert metrics["select/fallback_pos_groups"] == 1
    assert metrics["select/fallback_neg_groups"] == 1
    assert metrics["select/fallback_zero_groups"] == 1


def test_ties_go_to_the_lower_row_index():
    scores = [0.2, -0.4, 0.2, -0.4, 0.2, -0.4, 0.0, 0.0, 0.1]
    kept, _ = kept_rows(scores, annotation_row=8)
    assert kept == [0, 1, 3, 8]
    scores = [-0.4, 0.2, -0.4, 0.2, 0.2, -0.4, 0.2, 0.0, 0.1]
    kept, _ = kept_rows(scores, annotation_row=8)
    assert kept == [0, 1, 2, 8]


def test_annotation_row_is_always_kept():
    generator = torch.Generator().manual_seed(0)
    for _ in range(200):
        groups = torch.randint(0, 5, (30,), generator=generator)
        scores = torch.randint(-2, 3, (30,), generator=generator).double() / 2
        annotation = torch.zeros(30, dtype=torch.bool)
        for g in groups.unique():
            rows = torch.nonzero(groups == g).flatten()
            annotation[rows[torch.randint(len(rows), (1,), generator=generator)]] = True
        kept = select_rows(scores, groups, annotation, DEFAULT, N).kept
        assert kept[annotation].all()
        for g in groups.unique():
            in_group = groups == g
            assert int(kept[in_group].sum()) == min(4, int(in_group.sum()))


def test_annotation_kept_even_with_the_smallest_score():
    kept, _ = kept_rows([0.5, -0.5, 0.4, -0.4, 0.3, -0.3, 0.2, -0.2, -0.9], annotation_row=8)
    assert 8 in kept and kept == [0, 1, 3, 8]


def test_group_without_annotation_fills_the_extra_slot():
    kept, _ = kept_rows([0.5, -0.5, 0.4, -0.4, 0.3, -0.3, 0.2, -0.2])
    assert kept == [0, 1, 2, 3]


def test_small_groups_keep_everything_and_groups_need_not_be_contiguous():
    scores = [0.1, 0.5, -0.2, 0.3, 0.0, -0.1, 0.2, -0.3, 0.4, -0.4, 0.05, 0.9]
    groups = [0, 1, 0, 1, 0, 1, 1, 1, 1, 1, 0, 1]
    annotation_rows = {10, 11}
    result = select_rows(
        t(scores), ids(groups), flags([i in annotation_rows for i in range(12)]), DEFAULT, N
    )
    kept = set(torch.nonzero(result.kept).flatten().tolist())
    assert {0, 2, 4, 10} <= kept  # group 0 has exactly k = 4 rows
    assert kept - {0, 2, 4, 10} == {1, 7, 9, 11}  # group 1: 0.5 positive, -0.4, -0.3 negative


def test_two_annotation_rows_are_an_error():
    with pytest.raises(ValueError, match="2 annotation rows"):
        select_rows(t([0.1, 0.2, 0.3]), ids([0, 0, 0]), flags([1, 1, 0]), DEFAULT, N)


def test_row_scores_is_the_masked_mean():
    token_advantages = t([[1.0, 3.0, 100.0], [2.0, 2.0, 2.0]])
    mask = flags([[1, 1, 0], [0, 0, 0]])
    torch.testing.assert_close(row_scores(token_advantages, mask), t([2.0, 0.0]))


def test_divisibility_rule():
    assert check_divisible(16, 4) == 0
    with pytest.raises(ConfigError) as error:
        check_divisible(14, 4)
    assert "14" in str(error.value) and "4 data-parallel ranks" in str(error.value)
    assert "14 % 4 = 2" in str(error.value)
    assert check_divisible(14, 4, allow_pad=True) == 2
    with pytest.raises(ConfigError):
        check_divisible(8, 0)


def correct(kept_values, rms_ref, reward_std=0.2, config=None):
    """Stage E on one group: annotation first, then the kept policy rows, then one dropped
    policy row (so the group lost rows)."""
    values = t([*kept_values, 0.7])
    n = len(values)
    kept = flags([True] * (n - 1) + [False])
    reference = SelectionReference(rms=t([rms_ref] * n), reward_std=t([reward_std] * n))
    result = post_selection_correction(
        values, ids([0] * n), flags([True] + [False] * (n - 1)), kept, reference, config
    )
    return result.advantages[:-1], result


def test_worked_example_correction_shrinks():
    advantages, result = correct([0.8, 0.2, -0.1, 0.1], rms_ref=0.3, reward_std=0.2)
    torch.testing.assert_close(
        advantages, t([0.491933, -0.044721, -0.313049, -0.134164]), atol=1e-6, rtol=0
    )
    assert result.metrics["correct/projections"] == 0
    assert abs(result.metrics["correct/scale_mean"] - 0.894425) < 1e-6


def test_worked_example_projection_without_shrink():
    advantages, result = correct([-0.2, 0.5, 0.1, -0.4], rms_ref=1.0)
    torch.testing.assert_close(
        advantages, t([0.0, 0.433333, 0.033333, -0.466667]), atol=1e-6, rtol=0
    )
    assert result.metrics["correct/projections"] == 1
    assert result.metrics["correct/scale_mean"] == 1.0


def test_worked_example_projection_with_shrink():
    advantages, _ = correct([-0.2, 0.5, 0.1, -0.4], rms_ref=0.1)
    torch.testing.assert_close(
        advantages, t([0.0, 0.135904, 0.010454, -0.146358]), atol=1e-6, rtol=0
    )
    assert abs(float(advantages.sum())) < 1e-12


def test_no_shrink_when_policy_rewards_had_no_spread():
    advantages, _ = correct([0.8, 0.2, -0.1, 0.1], rms_ref=0.01, reward_std=1e-4)
    torch.testing.assert_close(advantages, t([0.55, -0.05, -0.35, -0.15]))


def test_correction_can_only_shrink():
    advantages, _ = correct([0.8, 0.2, -0.1, 0.1], rms_ref=100.0)
    torch.testing.assert_close(advantages, t([0.55, -0.05, -0.35, -0.15]))
    advantages, _ = correct([0.8, 0.2, -0.1, 0.1], rms_ref=1e-6, config=CorrectionConfig())
    torch.testing.assert_close(advantages, 0.25 * t([0.55, -0.05, -0.35, -0.15]))


def test_groups_that_kept_every_row_are_unchanged_and_dropped_rows_are_zero():
    values = t([0.3, -0.1, 0.4, 0.9, -0.5])
    groups = ids([0, 0, 1, 1, 1])
    kept = flags([1, 1, 1, 1, 0])
    reference = SelectionReference(rms=t([0.1] * 5), reward_std=t([0.5] * 5))
    result = post_selection_correction(values, groups, None, kept, reference)
    torch.testing.assert_close(result.advantages[:2], t([0.3, -0.1]))
    assert float(result.advantages[4]) == 0.0
    assert result.metrics["correct/groups"] == 1


def test_selection_reference():
    advantages, rewards = t([0.3, -0.3, 0.6, 0.0]), t([0.8, 0.2, 1.0, 0.5])
    reference = selection_reference(advantages, rewards, ids([0] * 4), flags([0, 0, 1, 0]))
    rms = math.sqrt((0.09 + 0.09 + 0.0) / 3)  # policy rows only, annotation row 2 excluded
    std = float(t([0.8, 0.2, 0.5]).std())
    torch.testing.assert_close(reference.rms, t([rms] * 4))
    torch.testing.assert_close(reference.reward_std, t([std] * 4))


def test_selection_reference_excludes_the_annotation_row():
    """Issue 16: policy [-0.3, -0.1, 0.1, 0.3] and annotation 0.9 give rms_ref 0.2236."""
    advantages, rewards = t([-0.3, -0.1, 0.1, 0.3, 0.9]), t([0.2, 0.4, 0.6, 0.8, 1.0])
    reference = selection_reference(advantages, rewards, ids([0] * 5), flags([0, 0, 0, 0, 1]))
    torch.testing.assert_close(reference.rms, t([math.sqrt(0.05)] * 5))
    assert abs(float(reference.rms[0]) - 0.2236) < 1e-4
    assert abs(float(reference.rms[0]) - 0.4494) > 0.2


def test_pipeline_a_to_e_is_finite_and_centred():
    generator = torch.Generator().manual_seed(1)
    groups = torch.arange(6).repeat_interleave(9)
    annotation = (torch.arange(54) % 9) == 8
    rewards = torch.rand(54, generator=generator, dtype=F64).round(decimals=1)
    rewards[annotation] = 1.0
    rewards[:8] = 0.5  # one zero-variance group
    advantages = orarl_advantages(rewards, groups, is_annotation=annotation).advantages
    reference = selection_reference(advantages, rewards, groups, annotation)
    kept = select_rows(advantages, groups, annotation, DEFAULT, N).kept
    corrected = post_selection_correction(advantages, groups, annotation, kept, reference)
    assert torch.isfinite(corrected.advantages).all()
    assert int(kept.sum()) == 24 and check_divisible(int(kept.sum()), 4) == 0
    for g in range(6):
        rows = (groups == g) & kept
        assert abs(float(corrected.advantages[rows].sum())) < 1e-9
        assert float(corrected.advantages[rows & annotation]) >= 0
    assert all(math.isfinite(v) for v in corrected.metrics.values())


def test_correction_config_validation():
    with pytest.raises(ConfigError, match="min_scale=2"):
        CorrectionConfig(min_scale=2.0, max_scale=1.0)
