"""`data.prompt_style: video_r1`: Video-R1's QUESTION_TEMPLATE + TYPE_TEMPLATE
(tulerfeng/Video-R1 src/r1-v/src/open_r1/grpo.py, `make_conversation_image_and_video`)."""

from __future__ import annotations

from tests.rewards.factories import make
from videorl.config import load_config
from videorl.data.prompts import THINK, build_prompt
from videorl.rewards import RewardConfig, score_response

QUESTION = (
    "\nPlease think about this question as if you were a human pondering deeply. Engage in an "
    "internal dialogue using expressions such as 'let me think', 'wait', 'Hmm', 'oh, I see', "
    "'let's break it down', etc, or other natural language thought expressions It's "
    "encouraged to include self-reflection or verification in the reasoning process. Provide "
    "your detailed reasoning between the <think> </think> tags, and then give your final "
    "answer between the <answer> </answer> tags."
)


def test_multiple_choice_is_the_published_text():
    qa = make("video_qa", {"letter": "B"}, problem="What colour is it?", options=["red", "blue"])
    assert build_prompt(qa, think=True, style="video_r1") == (
        "What colour is it?Options:\nA. red\nB. blue\n"
        + QUESTION
        + " Please provide only the single option letter (e.g., A, B, C, D, etc.) within the "
        "<answer> </answer> tags."
    )


def test_numeric_questions_get_the_numerical_tail_and_others_fall_back():
    si = make(
        "spatial_intelligence", {"value": 3}, problem="How many chairs?", subtype="object_counting"
    )
    assert build_prompt(si, think=True, style="video_r1") == (
        "How many chairs?"
        + QUESTION
        + " Please provide the numerical value (e.g., 42 or 3.14) within the <answer> </answer> "
        "tags."
    )
    tg = make("temporal_grounding", {"windows": [[2, 6]]}, problem="a dog jumps")
    assert build_prompt(tg, think=True, style="video_r1") == build_prompt(tg, think=True)
    assert THINK not in build_prompt(si, think=True, style="video_r1")


def test_the_answer_it_asks_for_scores_and_the_style_loads():
    qa = make("video_qa", {"letter": "B"}, problem="What?", options=["x", "y"])
    response = "<think>let me think</think> <answer>B</answer>"
    assert score_response(qa, response, RewardConfig(think_required=True)).overall == 1.0
    assert load_config(None, ["data.prompt_style=video_r1"]).data.prompt_style == "video_r1"
