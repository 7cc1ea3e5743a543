"""Tracking: mean IoU over all ground-truth frames, missing frames count 0."""

import pytest

from tests.rewards.factories import make
from videorl.rewards import RewardConfig, score_response

CONFIG = RewardConfig(num_workers=1)
RECORD = make(
    "tracking",
    {
        "boxes": {
            "0": [0, 0, 10, 10],
            "5": [0, 0, 10, 10],
            "10": [0, 0, 10, 10],
            "15": [0, 0, 10, 10],
        }
    },
)


def test_missing_frames_count_zero_and_extra_frames_are_ignored():
    payload = '{"boxes": {"0": [0, 0, 10, 10], "5.0": [5, 0, 15, 10], "99": [0, 0, 10, 10]}}'
    result = score_response(RECORD, f"<answer>{payload}</answer>", CONFIG)
    assert result.overall == pytest.approx((1 + 1 / 3) / 4)
    assert result.components["coverage"] == 0.5


def test_invalid_box_counts_as_missing():
    payload = (
        '{"boxes": {"0": [0, 0, 10, 10], "5": [10, 0, 0, 10], "10": "x", "15": [0, 0, 10, 10]}}'
    )
    assert score_response(RECORD, f"<answer>{payload}</answer>", CONFIG).overall == 0.5


@pytest.mark.parametrize("payload", ['{"boxes": []}', "[]", '{"frames": {}}', "{"])
def test_malformed(payload):
    assert score_response(RECORD, f"<answer>{payload}</answer>", CONFIG).overall == 0.0
