"""Temporal grounding: payload forms, tIoU / iou_v2 task, ground-truth clipping."""

import pytest

from tests.rewards.factories import make
from videorl.rewards import RewardConfig, score_response
from videorl.tasks.temporal_grounding.reward import parse

PLAIN = RewardConfig(num_workers=1)
SHAPED = RewardConfig(num_workers=1, tg_shaping="iou_v2")


@pytest.mark.parametrize(
    "payload, expected",
    [
        ("3 to 7", (3.0, 7.0)),
        ("8.50s to 12.40s", (8.5, 12.4)),
        ("8.5 s and 12.4 s", (8.5, 12.4)),
        (" 3 TO 7 ", (3.0, 7.0)),
        ("4 to 4", (4.0, 4.0)),
    ],
)
def test_parse_accepts(payload, expected):
    assert parse(payload) == expected


@pytest.mark.parametrize(
    "payload",
    [
        "7 to 3",
        "-1 to 3",
        "3 - 7",
        "3 to",
        "nan to 5",
        "1e400 to 1e401",
        "3 to 7 seconds",
        "[3, 7]",
    ],
)
def test_parse_rejects(payload):
    assert parse(payload) is None


def test_worked_example_through_the_router():
    record = make("temporal_grounding", {"windows": [[2, 6]]}, duration=10)
    plain = score_response(record, "<answer>3 to 7</answer>", PLAIN)
    assert plain.overall == pytest.approx(0.6, abs=1e-12)
    assert plain.components["iou"] == pytest.approx(0.6, abs=1e-12)
    assert "iou_v2" not in plain.components
    shaped = score_response(record, "<answer>3 to 7</answer>", SHAPED)
    assert shaped.overall == pytest.approx(0.486, abs=1e-12)
    assert shaped.components["iou"] == pytest.approx(0.6, abs=1e-12)
    assert shaped.components["iou_v2"] == pytest.approx(0.486, abs=1e-12)


def test_reward_is_task_times_format():
    record = make("temporal_grounding", {"windows": [[2, 6]]}, duration=10)
    result = score_response(record, "<answer>2 to 6</answer> trailing", PLAIN)
    assert result.components["format"] == 0.0
    assert result.components["task"] == 1.0  # diagnostic only
    assert result.overall == 0.0


def test_best_of_several_windows():
    record = make("temporal_grounding", {"windows": [[0, 2], [10, 14]]}, duration=20)
    assert score_response(record, "<answer>10 to 14</answer>", PLAIN).overall == 1.0


def test_ground_truth_clipped_to_duration():
    record = make("temporal_grounding", {"windows": [[30, 50]]}, duration=40)
    assert score_response(record, "<answer>30 to 40</answer>", PLAIN).overall == 1.0


def test_iou_v2_without_duration_is_plain_tiou():
    record = make("temporal_grounding", {"windows": [[2, 6]]})
    assert score_response(record, "<answer>3 to 7</answer>", SHAPED).overall == pytest.approx(0.6)
