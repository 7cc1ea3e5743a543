"""Spatial intelligence: MRA for numeric subtypes, exact match for choice subtypes."""

import pytest

from tests.rewards.factories import make
from videorl.rewards import RewardConfig, score_response

CONFIG = RewardConfig(num_workers=1)


def test_numeric_mra_worked_example():
    record = make("spatial_intelligence", {"value": 10}, subtype="abs_distance")
    result = score_response(record, "<answer>12</answer>", CONFIG)
    assert result.overall == 0.7
    assert result.components["mra"] == 0.7


@pytest.mark.parametrize(
    "payload", ["12 meters", "about 12", "twelve", "inf", "1e999", "", "12, 13"]
)
def test_numeric_rejects_non_numbers(payload):
    record = make("spatial_intelligence", {"value": 12}, subtype="object_size")
    assert score_response(record, f"<answer>{payload}</answer>", CONFIG).overall == 0.0


def test_zero_target_gives_zero():
    record = make("spatial_intelligence", {"value": 0}, subtype="object_counting")
    assert score_response(record, "<answer>0</answer>", CONFIG).overall == 0.0


def test_choice_subtype():
    record = make("spatial_intelligence", {"letter": "D"}, subtype="rel_direction")
    assert score_response(record, "<answer>D</answer>", CONFIG).overall == 1.0
    assert score_response(record, "<answer>4</answer>", CONFIG).overall == 0.0
