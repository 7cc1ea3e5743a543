"""Video QA: multiple-choice questions about a video (docs/methods.md#rewards).

Answer `ChoiceAnswer` (a letter), or `TextAnswer` for an open-ended question (LongVT's rows:
a free-text ground truth, no options); reward `reward.py` (OraRL's: `orarl.py`) (an open-ended answer is
scored by the LLM judge of `reward.judge` in the LongVT plug-in, `rewards/judge.py`);
evaluation accuracy (macro over subtypes too); synthetic questions about a colour or the
order of appearance.

This package is the family: this module registers what reading and prompting a record
needs; `reward`, `evaluation`, `synth` and `demo` register the rest when first asked.
"""

from __future__ import annotations

from typing import Any

from videorl.data.columns import json_cell, object_cell
from videorl.data.families import Family, TaskFamily, register_family
from videorl.data.formats import choice_letter
from videorl.data.records import LETTERS, ChoiceAnswer, TextAnswer
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
        return TextAnswer.from_dict(data, where)
    return ChoiceAnswer.from_dict(data, where)


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


ALIASES = ("mcq", "videoqa", "multiple_choice")
PUBLISHED = {
    "orarl": lambda record: orarl_choice_or_number(record, "", ORARL_QA_TAIL),
    "video_r1": video_r1_choice_or_number,
}
register_family(
    TaskFamily(
        "video_qa",
        "qa",
        answer,
        choice_or_number,
        __name__,
        ALIASES,
        cell_answer=cell_answer,
        video_r1_types=("multiple choice",),
        published=PUBLISHED,
    )
)
