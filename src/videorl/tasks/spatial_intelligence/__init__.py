"""Spatial intelligence: numeric and multiple-choice questions about a scene's layout
(VSI-Bench's subtypes; docs/methods.md#answer-protocol).

Answer `NumericAnswer` (scored by mean relative accuracy) or `ChoiceAnswer`; reward
`reward.py` (OraRL's: `orarl.py`); synthetic scenes for every subtype of
`SI_NUMERIC_SUBTYPES` and `SI_CHOICE_SUBTYPES` (chosen by index, so eight records hold all).

This package is the family: this module registers what reading and prompting a record
needs; `reward`, `evaluation`, `synth` and `demo` register the rest when first asked.
"""

from __future__ import annotations

from typing import Any

from videorl.data.columns import json_cell, object_cell
from videorl.data.families import Family, TaskFamily, register_family
from videorl.data.formats import choice_letter
from videorl.data.records import (
    LETTERS,
    Answer,
    ChoiceAnswer,
    NumericAnswer,
)
from videorl.tasks.choice_prompts import (
    choice_or_number,
    orarl_choice_or_number,
    video_r1_choice_or_number,
)
from videorl.tasks.spatial_intelligence.prompts import ORARL_SI_CHOICE_TAIL, ORARL_SI_PREFIX


def answer(data: dict[str, Any], where: str) -> Answer:
    """`{"letter": "B"}` for a choice, else `{"value": x}`."""
    return (ChoiceAnswer if "letter" in data else NumericAnswer).from_dict(data, where)


def cell_answer(raw: Any, options: tuple[str, ...], column: str) -> Answer:
    """A number (without options), else a letter, option text or index."""
    raw = json_cell(raw)
    if isinstance(raw, dict):
        return object_cell(Family("spatial_intelligence"), raw, column)
    if not options:
        try:
            return NumericAnswer(float(raw))
        except (TypeError, ValueError):
            pass
    letters = options or tuple(LETTERS)
    return ChoiceAnswer(choice_letter(raw.strip() if isinstance(raw, str) else raw, letters))


ALIASES = ("vsi", "spatial_reasoning")
PUBLISHED = {
    "orarl": lambda record: orarl_choice_or_number(record, ORARL_SI_PREFIX, ORARL_SI_CHOICE_TAIL),
    "video_r1": video_r1_choice_or_number,
}
register_family(
    TaskFamily(
        "spatial_intelligence",
        "si",
        answer,
        choice_or_number,
        __name__,
        ALIASES,
        cell_answer=cell_answer,
        subtype_groups=True,
        video_r1_types=("numerical", "regression"),
        published=PUBLISHED,
    )
)
