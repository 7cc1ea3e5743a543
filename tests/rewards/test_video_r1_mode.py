"""`reward.mode: video_r1` scores as Video-R1's `grpo.py` (issue 47, item 5).

The reference below transcribes tulerfeng/Video-R1 `src/r1-v/src/open_r1/grpo.py`
(`accuracy_reward` lines 66-165, `format_reward` lines 168-173; OCR and free-form left out,
their rows have no videorl family): its regexes and arithmetic, run on the same responses as
`rewards/video_r1.py`, which scans instead of backtracking.
"""

from __future__ import annotations

import random
import re

import pytest

from videorl.data.formats import from_video_r1
from videorl.errors import ConfigError
from videorl.rewards import RewardConfig, score_response
from videorl.rewards.video_r1 import answer_text, format_ok

from .factories import all_records

VIDEO_R1 = RewardConfig(num_workers=1, mode="video_r1", composition="sum")
OURS = RewardConfig(num_workers=1, composition="sum", think_required=True)


def published_extract_answer(text):
    match = re.search(r"<answer>\s*(.*?)\s*</answer>", text, re.DOTALL)
    return match.group(1).strip() if match else ""


def published_normalize_number(num_str):
    try:
        return float(num_str.replace(",", ""))
    except Exception:  # noqa: BLE001 - as published
        return None


def published_accuracy(question_type, content, sol):
    try:
        output_ans, gt_ans = published_extract_answer(content), published_extract_answer(sol)
        if question_type == "multiple choice":
            return 1.0 if output_ans.strip() == gt_ans.strip() else 0.0
        if question_type == "numerical":
            if (("." in gt_ans) or ("," in gt_ans)) != (("." in output_ans) or ("," in output_ans)):
                return 0.0
            gt_number = published_normalize_number(gt_ans)
            out_number = published_normalize_number(output_ans)
            if gt_number is None or out_number is None:
                return 0.0
            return 1.0 if round(gt_number, 2) == round(out_number, 2) else 0.0
        gt_number = published_normalize_number(gt_ans)
        out_number = published_normalize_number(output_ans)
        rel_diff = (abs(out_number - gt_number) + 1e-9) / (abs(gt_number) + 1e-9)
        return 1 - min(1.0, max(0.0, rel_diff))
    except Exception:  # noqa: BLE001 - as published (abs(None) lands here)
        return 0.0


def published_format(content):
    return (
        1.0
        if re.fullmatch(r"<think>.*?</think>\s*<answer>.*?</answer>", content, re.DOTALL)
        else 0.0
    )


def row(problem_type, solution, **extra):
    return from_video_r1(
        {
            "problem": "How many?",
            "data_type": "video",
            "problem_type": problem_type,
            "solution": solution,
            "path": "v.mp4",
            **extra,
        },
        "r0",
        None,
    )


RECORDS = {
    "multiple choice": row("multiple choice", "<answer>B</answer>", options=["A. x", "B. y"]),
    "numerical": row("numerical", "<answer>12</answer>"),
    "numerical-decimal": row("numerical", "<answer>2.5</answer>"),
    "regression": row("regression", "<answer>4.0</answer>"),
}

HOSTILE = [
    "<think>t</think><answer>B</answer>",
    "<think>t</think>\n<answer> B </answer>",
    "<think>t</think><answer>(B)</answer>",
    "<think>t</think><answer>B. y</answer>",
    "<think>t</think><answer>b</answer>",
    "<think>t</think><answer>B</answer>\n",
    " <think>t</think><answer>B</answer>",
    "x<think>t</think><answer>B</answer>",
    "<answer>B</answer>",
    "<think>t</think><answer>A</answer><answer>B</answer>",
    "<think><answer>B</answer></think><answer>A</answer>",
    "<think>t</think> text <answer>B</answer>",
    "<think>a</think>b</think>\t<answer>B</answer>",
    "<think>t</think><answer>B</answer>tail</answer>",
    "<think>t</think><answer>B",
    "<think>t</think><Answer>B</Answer>",
    "<THINK>t</THINK><answer>B</answer>",
    "<think></think><answer></answer>",
    "<think>t</think><answer>\u00a0B\u2003</answer>",
    "<think>t</think>\u00a0<answer>B</answer>",
    "<think>t</think>\x1c<answer>B</answer>",
    "<think>t</think><answer>B</answer ><answer>B</answer>",
    "<think>t</think><answer>12</answer>",
    "<think>t</think><answer>12.0</answer>",
    "<think>t</think><answer>12.004</answer>",
    "<think>t</think><answer>1,2</answer>",
    "<think>t</think><answer>1_2</answer>",
    "<think>t</think><answer>\uff11\uff12</answer>",
    "<think>t</think><answer>1.2e1</answer>",
    "<think>t</think><answer>twelve</answer>",
    "<think>t</think><answer>2.50</answer>",
    "<think>t</think><answer>2.5</answer>",
    "<think>t</think><answer>2,5</answer>",
    "<think>t</think><answer>2.504</answer>",
    "<think>t</think><answer>4</answer>",
    "<think>t</think><answer>3.0</answer>",
    "<think>t</think><answer>-4</answer>",
    "<think>t</think><answer>400</answer>",
    "<think>t</think><answer>inf</answer>",
    "<think>t</think><answer>-inf</answer>",
    "<think>t</think><answer>1e999</answer>",
    "",
    "<think>",
    "</answer><answer>",
]
FRAGMENTS = [
    "<think>",
    "</think>",
    "<answer>",
    "</answer>",
    " ",
    "\n",
    "B",
    "b",
    "(B)",
    "12",
    "2.5",
    "4.0",
    "1,000",
    "x",
    "<think>t</think>",
    "\u00a0",
]


ANSWERS = [
    "B",
    " B ",
    "b",
    "(B)",
    "B.",
    "B. y",
    "12",
    "12.0",
    "12.001",
    "1,2",
    "2.5",
    "2.50",
    "2,5",
    "4",
    "4.0",
    "3.9",
    "-4",
    "1e1",
    " 4.0\n",
    "x",
    "",
]


def fuzz(count: int) -> list[str]:
    """Half free concatenations of tag fragments, half well-formed responses with a random
    answer and random noise before, between and after the blocks."""
    rng = random.Random(47)
    free = ["".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(1, 8))) for _ in range(count)]
    noise = ["", "", "", " ", "\n", "x", "</answer>", "<answer>B</answer>"]
    shaped = [
        f"{rng.choice(noise)}<think>{rng.choice(FRAGMENTS)}</think>{rng.choice(noise)}"
        f"<answer>{rng.choice(ANSWERS)}</answer>{rng.choice(noise)}"
        for _ in range(count)
    ]
    return free + shaped


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_matches_video_r1_on_hostile_and_fuzzed_responses(name):
    record = RECORDS[name]
    kind = name.split("-")[0]
    solution = record.extra["video_r1_solution"]
    responses = HOSTILE + fuzz(1000)
    mismatches = []
    for response in responses:
        result = score_response(record, response, VIDEO_R1)
        expected = (published_accuracy(kind, response, solution), published_format(response))
        got = (result.components["task"], result.components["format"])
        if got != pytest.approx(expected, abs=1e-12):
            mismatches.append((response, got, expected))
        assert result.overall == pytest.approx(sum(got))
    assert mismatches == []


def test_nan_regression_answer_scores_zero_where_video_r1_gives_one():
    record, response = RECORDS["regression"], "<think>t</think><answer>nan</answer>"
    assert published_accuracy("regression", response, "<answer>4.0</answer>") == 1.0
    assert score_response(record, response, VIDEO_R1).components["task"] == 0.0


def test_worked_examples_and_videorl_mode_differences():
    choice, number, regression = (
        RECORDS["multiple choice"],
        RECORDS["numerical"],
        RECORDS["regression"],
    )
    cases = [
        # (record, response, video_r1 (task, format), videorl task)
        (choice, "<think>t</think><answer>B</answer>", (1.0, 1.0), 1.0),
        (choice, "<think>t</think><answer>(B)</answer>", (0.0, 1.0), 1.0),
        (choice, "<think>t</think><answer>B. y</answer>", (0.0, 1.0), 1.0),
        (choice, "<think>t</think>\n<answer>B</answer>\n", (1.0, 0.0), 1.0),
        (choice, "<think>t</think><answer>A</answer><answer>B</answer>", (0.0, 1.0), 1.0),
        (number, "<think>t</think><answer>12.0</answer>", (0.0, 1.0), 1.0),
        (number, "<think>t</think><answer>1,2</answer>", (0.0, 1.0), 0.0),
        (regression, "<think>t</think><answer>3.0</answer>", (0.75, 1.0), None),
    ]
    for record, response, (task, fmt), ours in cases:
        result = score_response(record, response, VIDEO_R1)
        assert (result.components["task"], result.components["format"]) == pytest.approx(
            (task, fmt)
        ), response
        if ours is not None:
            assert score_response(record, response, OURS).components["task"] == ours, response


def test_helpers_follow_the_published_regexes():
    assert answer_text("a<answer> x <answer> y </answer>z</answer>") == "x <answer> y"
    assert answer_text("<answer>x") == ""
    assert format_ok("<think></think><answer></answer>")
    assert not format_ok("<think></think><answer>")
    assert not format_ok("<think></answer>")


def test_other_records_keep_the_family_reward():
    grounding = all_records()["tg"]
    response = "<think>t</think><answer>0.00s to 1.00s</answer>"
    assert (
        score_response(grounding, response, VIDEO_R1).components
        == score_response(grounding, response, OURS).components
    )


def test_video_r1_mode_needs_the_sum():
    with pytest.raises(ConfigError, match="mode=video_r1 sums"):
        RewardConfig(mode="video_r1")
