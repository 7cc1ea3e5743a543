"""Video QA: multiple-choice questions about a video (docs/methods.md#rewards).

Answer `ChoiceAnswer` (a letter), or `TextAnswer` for an open-ended question (LongVT's rows:
a free-text ground truth, no options); reward `rewards/video_qa.py` (an open-ended answer is
scored by the LLM judge of `reward.judge` in the LongVT plug-in, `rewards/judge.py`);
evaluation accuracy (macro over subtypes too); synthetic questions about a colour or the
order of appearance.
"""

from __future__ import annotations

from typing import Any

from videorl.data.columns import json_cell, object_cell
from videorl.data.families import Family, TaskFamily, register_family
from videorl.data.formats import choice_letter
from videorl.data.records import LETTERS, ChoiceAnswer, TextAnswer, choice_value
from videorl.errors import DataError
from videorl.tasks.choice_prompts import (
    choice_or_number,
    orarl_choice_or_number,
    video_r1_choice_or_number,
)
from videorl.tasks.video_qa.prompts import ORARL_QA_TAIL


def answer(data: dict[str, Any], where: str) -> ChoiceAnswer | TextAnswer:
    """`{"letter": "B"}`, or `{"text": "..."}` for an open-ended question."""
    if "letter" not in data and "text" in data:
        return text_value(data["text"], f"{where}.text")
    if "letter" not in data:
        raise DataError(f"{where}: missing field 'letter'")
    return choice_value(data["letter"], f"{where}.letter")


def text_value(value: Any, where: str) -> TextAnswer:
    if not isinstance(value, str) or not value.strip():
        raise DataError(f"{where}: expected a non-empty answer text, got {value!r}")
    return TextAnswer(value.strip())


def cell_answer(raw: Any, options: tuple[str, ...], column: str) -> ChoiceAnswer | TextAnswer:
    """A letter, the option's text or its 0-based index (`formats.choice_letter`); a row
    without options whose answer is text that is not a letter is open-ended (`TextAnswer`,
    LongVT's `reward_model.ground_truth`)."""
    raw = json_cell(raw)
    if isinstance(raw, dict):
        return object_cell(Family("video_qa"), raw, column)
    letters = options or tuple(LETTERS)
    try:
        return ChoiceAnswer(choice_letter(raw.strip() if isinstance(raw, str) else raw, letters))
    except DataError:
        if options or not isinstance(raw, str) or not raw.strip():
            raise
        return TextAnswer(raw.strip())


register_family(
    TaskFamily(
        name="video_qa",
        short="qa",
        aliases=("mcq", "videoqa", "multiple_choice"),
        answer=answer,
        cell_answer=cell_answer,
        prompt=choice_or_number,
        published={
            "orarl": lambda record: orarl_choice_or_number(record, "", ORARL_QA_TAIL),
            "video_r1": video_r1_choice_or_number,
        },
        video_r1_types=("multiple choice",),
        package=__name__,
    )
)
