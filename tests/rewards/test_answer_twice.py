"""`reward.mode: videoauto_r1` scores as VideoAuto-R1's `reward.py` (issue 49, item 4).

The reference regex below transcribes IVUL-KAUST/VideoAuto-R1 `videoauto_r1/reward/reward.py`
(`_PATTERN_ANSWER_THINK_ANSWER`, `extract_twice_boxed_content`); `rewards/answer_twice.py`
counts the think tags instead of its look-aheads, and must agree on every response here.
"""

from __future__ import annotations

import re

import pytest

from videorl.data.prompts import build_prompt
from videorl.rewards import RewardConfig, score_response
from videorl.rewards.answer_twice import boxable, first_answer, format_ok, second_answer
from videorl.rewards.registry import FAMILY_REWARDS

from .factories import all_records

MODE = RewardConfig(num_workers=1, mode="videoauto_r1")

PUBLISHED_SHAPE = re.compile(
    r"(?!.*<think>.*<think>)(?!.*</think>.*</think>)"
    r"\s*\\boxed\{(?P<ans1>(?:[^{}]|\{[^{}]*\})*)\}\s*"
    r"<think>(?=[\s\S]*?\S)[\s\S]*?</think>\s*"
    r"\\boxed\{(?P<ans2>(?:[^{}]|\{[^{}]*\})*)\}\s*$",
    re.DOTALL,
)
PUBLISHED_BOXED = re.compile(r"\\boxed\{([^{}]*(?:\{[^{}]*\}[^{}]*)*)\}")


def published_twice(text: str, index: int) -> str:
    text = text.split("<think>")[0] if index == 0 else text.split("</think>")[-1]
    found = PUBLISHED_BOXED.findall(text)
    return found[0] if len(found) == 1 else ""


RESPONSES = [
    r"\boxed{B}<think>the cup moves left</think>\boxed{B}",
    r"  \boxed{B} <think>x</think> \boxed{C}  ",
    r"\boxed{B}<think></think>\boxed{C}",  # the published "not empty" check lets this pass
    r"\boxed{B}",
    r"\boxed{B}<think>x</think>",
    r"<think>x</think>\boxed{B}",
    r"\boxed{B}\boxed{C}<think>x</think>\boxed{D}",
    r"\boxed{B}<think>x</think>\boxed{C}<think>y</think>\boxed{D}",
    r"\boxed{\frac{1}{2}}<think>x</think>\boxed{\frac{1}{2}}",
    r"\boxed{{{deep}}}<think>x</think>\boxed{A}",
    r"\boxed{B}<think>x</think>\boxed{C} trailing",
    "\\boxed{B}\n<think>line\nline</think>\n\\boxed{C}\n",
    r"\boxed{Let's analyze the problem step by step.}<think>x</think>\boxed{A}",
    "",
]


@pytest.mark.parametrize("response", RESPONSES)
def test_parsing_matches_the_published_regexes(response):
    assert format_ok(response) == (PUBLISHED_SHAPE.match(response) is not None)
    assert first_answer(response) == published_twice(response, 0).strip()
    assert second_answer(response) == published_twice(response, 1).strip()


def qa(letter: str = "B"):
    record = all_records()["qa"]
    assert record.answer.letter == letter
    return record


def test_weights_format_and_both_answers():
    record = qa()
    both = score_response(record, r"\boxed{B}<think>sure</think>\boxed{B}", MODE)
    assert both.components["answer1"] == 1.0 and both.components["answer2"] == 1.0
    assert both.overall == pytest.approx(0.9 + 1.1 + 1.0)
    revised = score_response(record, r"\boxed{A}<think>no, B</think>\boxed{B}", MODE)
    assert revised.overall == pytest.approx(1.1 + 1.0)
    assert revised.components["task"] == 1.0  # the final answer is what task reports
    lost = score_response(record, r"\boxed{B}<think>no, A</think>\boxed{A}", MODE)
    assert lost.overall == pytest.approx(0.9 + 1.0)
    # no <think>: one box is both answers (as reward.py splits the text), format 0
    direct = score_response(record, r"\boxed{B}", MODE)
    assert direct.components["format"] == 0.0
    assert direct.overall == pytest.approx(0.9 + 1.1)


def test_fallback_bonus_needs_a_correct_reviewed_answer():
    record = qa()
    declined = r"\boxed{Let's analyze the problem step by step.}<think>so B</think>\boxed{B}"
    right = score_response(record, declined, MODE)
    assert right.components["fallback"] == 1.0 and right.components["answer1"] == 0.0
    assert right.overall == pytest.approx(1.1 + 1.0 + 0.3)
    wrong = score_response(record, declined.replace(r"\boxed{B}", r"\boxed{A}"), MODE)
    assert wrong.components["fallback"] == 0.0
    assert wrong.overall == pytest.approx(1.0)


def test_families_whose_payload_cannot_be_boxed_keep_their_reward():
    records = all_records()
    assert boxable(records["qa"]) and boxable(records["tg"])
    assert not boxable(records["trk"])  # nested JSON boxes
    tracking = records["trk"]
    ours = score_response(tracking, "<answer>{}</answer>", RewardConfig(num_workers=1))
    mode = score_response(tracking, "<answer>{}</answer>", MODE)
    assert mode.components == ours.components


def test_temporal_grounding_scores_boxed_windows():
    record = all_records()["tg"]
    window = FAMILY_REWARDS[record.family].serialize(record)
    result = score_response(record, rf"\boxed{{{window}}}<think>x</think>\boxed{{{window}}}", MODE)
    assert result.components["answer1"] == 1.0 and result.components["answer2"] == 1.0


def test_prompt_style_puts_the_answer_in_boxes():
    record = qa()
    text = build_prompt(record, think=False, style="videoauto_r1")
    assert "<answer>" not in text and "\\boxed{X}" in text


def test_unknown_mode_names_the_new_one():
    with pytest.raises(Exception, match="videoauto_r1"):
        RewardConfig(num_workers=1, mode="nope")  # type: ignore[arg-type]
