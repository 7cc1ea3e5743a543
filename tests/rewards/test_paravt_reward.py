"""ParaVT's PARA-GRPO reward (`videorl.rewards.paravt`, configs/paravt.yaml): worked values
of the parseability-anchored format reward, the tool reward and their sum
(ParaVT `paravt/rl/rewards/{format,tool,compose}.py`)."""

from __future__ import annotations

import pytest

from tests.rewards.factories import make
from videorl.data.records import TextAnswer
from videorl.rewards import RewardConfig, score_response
from videorl.rewards.calls import ToolCallMade, trajectory_text
from videorl.rewards.paravt import (
    extract_answer,
    format_reward,
    score,
    score_vanilla,
    token_f1,
    tool_reward,
)

CONFIG = RewardConfig(num_workers=1)
THINK = "<think>the cup moves left at 12 s</think>"
CALL = '<tool_call>\n{"name": "crop_video", "arguments": {"start_time": 8, "end_time": 16}}\n</tool_call>'
FINAL = "<think>the clip shows it clearly</think><answer>B</answer>"


def _call(turn=1, ok=True):
    text = f"{THINK}{CALL}"
    return ToolCallMade(
        "crop_video", {"start_time": 8, "end_time": 16}, ok=ok, turn=turn, turn_text=text
    )


def test_the_anchor_pays_for_closed_think_and_the_full_flow():
    # answer_suffix: think 0.2 + <answer> 0.3 + </answer> 0.2; anchor 0.5 x (0.4 + 0.3);
    # balanced tags +0.1: 0.7 + 0.35 + 0.1 = 1.15, capped at 1
    assert format_reward(FINAL) == 1.0
    assert format_reward(FINAL, anchor_weight=0.0) == pytest.approx(0.8)
    # an unclosed <think>: think 0.2 + answer 0.5 + 0.5 x (-0.3); tags unbalanced
    assert format_reward("<think>the cup moves left<answer>B</answer>") == pytest.approx(0.55)
    # empty answer tags earn nothing but the balance bonus on a substantive think
    assert format_reward("<think>the cup moves left</think><answer> </answer>") == pytest.approx(
        0.2 + 0.5 * 0.4 + 0.1
    )
    assert format_reward("<answer></answer>") == 0.0


def test_think_before_a_parseable_call_earns_the_ordering_bonus():
    no_anchor = format_reward(f"{THINK}{CALL}{FINAL}", anchor_weight=0.0)
    # think 0.2 + answer 0.5 + think-before-tool 0.3, balanced +0.1, capped at 1
    assert no_anchor == 1.0
    empty_call = format_reward(f"{THINK}<tool_call></tool_call>{FINAL}", anchor_weight=0.0)
    assert empty_call == pytest.approx(0.8)  # the empty-tag exploit earns no tool credit


def test_the_tool_reward_has_four_levels():
    assert tool_reward(FINAL, answered=False, accuracy=1.0) == 0.0
    assert tool_reward(CALL, answered=False, accuracy=0.0) == pytest.approx(0.1)
    assert tool_reward(CALL, answered=True, accuracy=0.0) == pytest.approx(0.3)
    assert tool_reward(CALL, answered=True, accuracy=1.0) == pytest.approx(0.8)


def test_the_reward_reads_every_model_turn_of_the_trajectory():
    record = make("video_qa", {"letter": "B"})
    calls = (_call(turn=1),)
    assert trajectory_text(FINAL, calls) == f"{THINK}{CALL}{FINAL}"
    parts = score(record, FINAL, CONFIG, calls)
    # acc 1 + format 1 + tool 0.8 = 2.8 of 2.8
    assert parts == {"format": 1.0, "task": 1.0, "tool": 1.0, "overall": pytest.approx(1.0)}
    direct = score(record, FINAL, CONFIG)
    assert direct["tool"] == 0.0 and direct["overall"] == pytest.approx(2.0 / 2.8)
    vanilla = score_vanilla(record, FINAL, CONFIG)
    # no anchor, default weights: think 0.3 + answer 0.3 + balanced 0.1
    assert vanilla["format"] == pytest.approx(0.7)


def test_open_ended_answers_score_token_f1():
    record = make("video_qa", {"text": "a red cup on the table"})
    assert isinstance(record.answer, TextAnswer)
    assert token_f1("red cup", "a red cup on the table") == pytest.approx(2 * 1 * 0.5 / 1.5)
    parts = score(record, "<think>it is red, clearly</think><answer>red cup</answer>", CONFIG)
    assert parts["task"] == pytest.approx(2 / 3)


def test_answer_extraction_falls_back_as_published():
    assert extract_answer("<answer> C </answer>") == "C"
    assert extract_answer(f"<think>x</think>{CALL} D") == "D"
    assert extract_answer("first\nB") == "B"


def test_the_plugin_runs_through_the_reward_router():
    config = RewardConfig(
        num_workers=1,
        plugins={"video_qa": "videorl.rewards.paravt:score"},
        plugin_mode="replace",
    )
    record = make("video_qa", {"letter": "B"})
    result = score_response(record, FINAL, config, (_call(),))
    assert result.error is None and result.overall == pytest.approx(1.0)
