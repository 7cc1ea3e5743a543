"""Spatial grounding: the three accepted box forms, box IoU, declared box format."""

import pytest

from tests.rewards.factories import IMAGE, make
from videorl.rewards import RewardConfig, score_response
from videorl.tasks.spatial_grounding.reward import parse

CONFIG = RewardConfig(num_workers=1)


@pytest.mark.parametrize(
    "payload",
    [
        "[10, 20, 110, 80]",
        '{"bbox_2d": [10, 20, 110, 80]}',
        '[{"bbox_2d": [10, 20, 110, 80], "label": "cat"}]',
        '```json\n[{"bbox_2d": [10, 20, 110, 80]}]\n```',
    ],
)
def test_accepted_forms(payload):
    assert parse(payload) == (10, 20, 110, 80)


@pytest.mark.parametrize(
    "payload",
    [
        "[10, 20, 110]",
        "[110, 20, 10, 80]",
        '["10", 20, 110, 80]',
        "[true, 20, 110, 80]",
        "[NaN, 1, 2, 3]",
        "10, 20",
    ],
)
def test_rejected_forms(payload):
    assert parse(payload) is None


def test_iou_in_declared_format():
    record = make(
        "spatial_grounding", {"box": [0, 0, 100, 100]}, box_format="norm1000", image=IMAGE
    )
    result = score_response(record, "<answer>[50, 0, 150, 100]</answer>", CONFIG)
    assert result.overall == pytest.approx(50 * 100 / (2 * 100 * 100 - 50 * 100))
    assert result.components["iou"] == result.overall
