"""Text-only math: a final answer in `\\boxed{}`, checked by equivalence
(docs/methods.md#rewards).

Answer `MathAnswer`; reward `reward.py` (the `\\boxed{}` protocol); evaluation
accuracy; synthetic arithmetic word problems with integer answers. No video.

This package is the family: this module registers what reading and prompting a record
needs; `reward`, `evaluation`, `synth` and `demo` register the rest when first asked.
"""

from __future__ import annotations

from typing import Any

from videorl.data.families import TaskFamily, register_family
from videorl.data.formats import final_answer
from videorl.data.records import MathAnswer
from videorl.tasks.math.prompts import math as prompt


def cell_answer(raw: Any, _options: tuple[str, ...], _column: str) -> MathAnswer:
    """The final answer of a solution (`\\boxed{...}`, GSM8K `#### x` or the text)."""
    text = str(raw[0] if isinstance(raw, (list, tuple)) and raw else raw)
    return MathAnswer(final_answer(text))


ALIASES = ("text_math",)
register_family(
    TaskFamily(
        "math",
        "math",
        MathAnswer.from_dict,
        prompt,
        __name__,
        ALIASES,
        uses_video=False,
        cell_answer=cell_answer,
    )
)
