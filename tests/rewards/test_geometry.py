"""The worked examples of docs/methods.md#temporal-iou and #mean-relative-accuracy, and the edge
cases of the plain metrics."""

import math

import pytest

from videorl.rewards.geometry import (
    box_iou,
    clip_window,
    mean_relative_accuracy,
    temporal_iou,
    temporal_iou_v2,
)


def test_tiou_worked_example():
    assert temporal_iou([3, 7], [2, 6]) == pytest.approx(0.6, abs=1e-12)


def test_iou_v2_worked_example():
    assert temporal_iou_v2([3, 7], [2, 6], duration=10) == pytest.approx(0.486, abs=1e-12)


def test_tiou_zero_union_disjoint_and_identity():
    assert temporal_iou([5, 5], [5, 5]) == 0.0
    assert temporal_iou([0, 1], [2, 3]) == 0.0
    assert temporal_iou([2.5, 7], [2.5, 7]) == 1.0


def test_tiou_non_finite_is_zero():
    assert temporal_iou([0, math.inf], [1, 2]) == 0.0
    assert temporal_iou([math.nan, 3], [1, 2]) == 0.0


def test_iou_v2_factors_floored_for_predictions_beyond_the_video():
    # tIoU = 10 / 25 = 0.4, end factor 1 - 15 / 10 < 0 -> floored at 0
    assert temporal_iou_v2([0, 25], [0, 10], duration=10) == 0.0
    assert temporal_iou_v2([3, 7], [2, 6], duration=0) == 0.0


def test_clip_window():
    assert clip_window([-1, 45.5], 40) == (0.0, 40.0)
    assert clip_window([-1, 45.5], None) == (0.0, 45.5)


def test_mra_worked_example():
    # relative error 0.2 exactly: thresholds 0.50..0.80 pass (7 of 10); in floats
    # 1 - 0.8 < 0.2 would drop the 0.80 threshold.
    assert mean_relative_accuracy(12, 10) == 0.7


@pytest.mark.parametrize(
    "pred, target, expected",
    [
        (10, 10, 1.0),
        (5, 0, 0.0),
        (0, 0, 0.0),
        (15, 10, 1 / 10),
        (16, 10, 0.0),
        (-12, -10, 0.7),
        (8, 10, 0.7),
    ],
)
def test_mra_cases(pred, target, expected):
    assert mean_relative_accuracy(pred, target) == pytest.approx(expected, abs=1e-12)


def test_mra_non_finite():
    assert mean_relative_accuracy(math.inf, 10) == 0.0
    assert mean_relative_accuracy(math.nan, 10) == 0.0


def test_box_iou():
    assert box_iou([0, 0, 10, 10], [0, 0, 10, 10]) == 1.0
    assert box_iou([0, 0, 10, 10], [5, 0, 15, 10]) == pytest.approx(50 / 150)
    assert box_iou([0, 0, 10, 10], [20, 20, 30, 30]) == 0.0
    assert box_iou([0, 0, 0, 0], [0, 0, 0, 0]) == 0.0
    assert box_iou([-1e308, -1e308, 1e308, 1e308], [0, 0, 1, 1]) == 0.0
