"""Text-only math: a final answer in `\\boxed{}`, checked by equivalence
(docs/methods.md#rewards).

Answer `MathAnswer`; reward `rewards/math_answer.py` (its `\\boxed{}` protocol); evaluation
accuracy; synthetic arithmetic word problems with integer answers. No video.
"""

from __future__ import annotations

from typing import Any

from videorl.data.families import TaskFamily, register_family
from videorl.data.formats import final_answer
from videorl.data.records import MathAnswer, require
from videorl.tasks.math.prompts import math as prompt


def answer(data: dict[str, Any], where: str) -> MathAnswer:
    return MathAnswer(str(require(data, "text", where)))


def cell_answer(raw: Any, options: tuple[str, ...], column: str) -> MathAnswer:
    """The final answer of a solution (`\\boxed{...}`, GSM8K `#### x` or the text)."""
    text = str(raw[0] if isinstance(raw, (list, tuple)) and raw else raw)
    return MathAnswer(final_answer(text))


register_family(
    TaskFamily(
        name="math",
        short="math",
        aliases=("text_math",),
        uses_video=False,
        answer=answer,
        cell_answer=cell_answer,
        prompt=prompt,
        package=__name__,
    )
)
