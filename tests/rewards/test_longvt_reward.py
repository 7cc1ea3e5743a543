"""LongVT's reward as a plug-in (`videorl.rewards.longvt`, configs/longvt.yaml): worked
examples of accuracy, format and the IoU of the last crop_video window
(LongVT `custom_rewards/vl_agent.py: compute_score`, `use_iou_reward=True`)."""

from __future__ import annotations

import pytest

from tests.rewards.factories import make
from videorl.rewards import RewardConfig, score_response
from videorl.rewards.calls import ToolCallMade
from videorl.rewards.longvt import answer_text, crop_iou, format_ok, score

CONFIG = RewardConfig(num_workers=1)
SPEC = "videorl.rewards.longvt:score"
FINAL = "<think>the clip shows a dog</think>\n<answer>B</answer>"


def _record(segment=(10.0, 20.0)):
    extra = {} if segment is None else {"video_segment": list(segment)}
    return make("video_qa", {"letter": "B"}, extra=extra)


def crop(start, end, turn=1, ok=True, name="crop_video"):
    return ToolCallMade(name, {"start_time": start, "end_time": end}, ok=ok, turn=turn)


def test_a_direct_answer_scores_accuracy_and_format_only():
    parts = score(_record(), FINAL, CONFIG)
    assert parts == {"format": 1.0, "task": 1.0, "time_iou": 0.0, "overall": pytest.approx(2 / 3)}
    wrong = score(_record(), FINAL.replace(">B<", ">C<"), CONFIG)
    assert (wrong["task"], wrong["format"], wrong["overall"]) == (0.0, 1.0, pytest.approx(1 / 3))


def test_the_last_crop_window_earns_its_iou_with_the_evidence_segment():
    # [12, 22] against [10, 20]: overlap 8 over the span [10, 22] = 12
    calls = (crop(0, 5, turn=1), crop(12, 22, turn=2))
    parts = score(_record(), FINAL, CONFIG, calls)
    assert parts["time_iou"] == pytest.approx(8 / 12)
    assert parts["format"] == 1.0 and parts["task"] == 1.0
    assert parts["overall"] == pytest.approx((1 + 1 + 8 / 12) / 3)
    # a failed call still counts (LongVT reads the call's text); a later unreadable window
    # or another tool falls back to the last readable crop_video
    later = (
        crop(12, 22, turn=1, ok=False),
        ToolCallMade("crop_video", {"start_time": "x", "end_time": 3}, turn=2),
        ToolCallMade("get_clip", {"start": 0, "end": 1}, turn=3),
    )
    assert crop_iou(_record(), later) == pytest.approx(8 / 12)
    assert crop_iou(_record(), (crop(30, 40),)) == 0.0  # disjoint
    assert crop_iou(_record(None), calls) == 0.0  # no evidence segment
    assert crop_iou(_record(), ()) == 0.0  # no call


@pytest.mark.parametrize(
    "response, calls, ok",
    [
        (FINAL, (), True),
        ("  " + FINAL + "\n", (), True),
        ("<answer>B</answer>", (), False),  # no think block
        ("<think>a</think><think>b</think><answer>B</answer>", (), True),
        ("<think>a</think><answer>B</answer><answer>B</answer>", (), False),
        ("<think>a<answer>B</answer>", (), False),  # unbalanced think
        ("<think>a</think>text<answer>B</answer>trailing", (), False),
        (FINAL, (crop(1, 2, turn=1),), True),
        (FINAL, (crop(1, 2, turn=1), crop(3, 4, turn=2)), True),
        (FINAL, (crop(1, 2, turn=1), crop(3, 4, turn=1)), False),  # two calls in a turn
        ("<think>a</think><think>b</think><answer>B</answer>", (crop(1, 2),), False),
        ("<think>a</think><answer>B</answer> done", (crop(1, 2),), False),
        ("<think>a</think><tool_call>{}</tool_call><answer>B</answer>", (), False),
    ],
)
def test_format_follows_longvt_on_the_final_turn_and_the_calls(response, calls, ok):
    assert format_ok(response, calls) is ok


def test_a_long_or_empty_answer_scores_no_accuracy():
    long_answer = "<think>t</think><answer>B" + " x" * 500 + "</answer>"
    assert len(answer_text(long_answer)) >= 1000
    assert score(_record(), long_answer, CONFIG)["task"] == 0.0
    assert score(_record(), long_answer, CONFIG)["format"] == 0.0
    assert answer_text("<think>t</think><answer>  </answer>") == ""
    assert score(_record(), "<think>t</think><answer></answer>", CONFIG)["task"] == 0.0
    assert answer_text("<answer>A</answer> and <answer> B </answer>") == "B"  # the last block


def test_the_router_gives_the_plugin_the_calls():
    config = RewardConfig(num_workers=1, plugins={"video_qa": SPEC})
    calls = (crop(10, 20),)
    result = score_response(_record(), FINAL, config, calls)
    assert result.components["time_iou"] == 1.0
    assert result.overall == pytest.approx(1.0)
    assert score_response(_record(), FINAL, config).overall == pytest.approx(2 / 3)
