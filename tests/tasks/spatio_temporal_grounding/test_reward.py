"""Spatio-temporal grounding: 0.2 * tIoU + 0.8 * mean box IoU, seconds matched within 0.5 s."""

import pytest

from tests.rewards.factories import make
from videorl.rewards import RewardConfig, score_response
from videorl.rewards.geometry import nearest_box

CONFIG = RewardConfig(num_workers=1)
BOX = [0, 0, 10, 10]
RECORD = make(
    "spatio_temporal_grounding",
    {"time": [2, 6], "boxes": {"2": BOX, "3": BOX, "4": BOX, "5": BOX}},
    duration=10,
)


def test_weighted_sum_with_missing_seconds():
    payload = '{"time": [3, 7], "boxes": {"2.4": [0, 0, 10, 10], "3": [0, 0, 10, 10], "4.6": [0, 0, 10, 10]}}'
    result = score_response(RECORD, f"<answer>{payload}</answer>", CONFIG)
    # seconds 2 (-> 2.4), 3 (-> 3) and 5 (-> 4.6) match; 4's nearest, 4.6, is 0.6 s away: missing
    assert result.components["tiou"] == pytest.approx(0.6)
    assert result.components["siou"] == pytest.approx(3 / 4)
    assert result.overall == pytest.approx(0.2 * 0.6 + 0.8 * 0.75)


def test_nearest_within_half_second():
    pred: dict[float, tuple[float, float, float, float]] = {1.0: (0, 0, 1, 1), 2.0: (0, 0, 2, 2)}
    assert nearest_box(pred, 1.4) == (0, 0, 1, 1)
    assert nearest_box(pred, 1.5) == (0, 0, 1, 1)  # tie -> earlier
    assert nearest_box(pred, 2.5) == (0, 0, 2, 2)
    assert nearest_box(pred, 2.51) is None


def test_parts_score_independently():
    only_time = score_response(RECORD, '<answer>{"time": [2, 6]}</answer>', CONFIG)
    assert only_time.overall == pytest.approx(0.2)
    bad_time = score_response(
        RECORD, '<answer>{"time": [6, 2], "boxes": {"2": [0,0,10,10]}}</answer>', CONFIG
    )
    assert bad_time.overall == pytest.approx(0.8 * 0.25)


def test_no_ground_truth_boxes_scores_tiou_alone():
    record = make("spatio_temporal_grounding", {"time": [2, 6], "boxes": {}}, duration=10)
    assert (
        score_response(record, '<answer>{"time": [2, 6], "boxes": {}}</answer>', CONFIG).overall
        == 1.0
    )
