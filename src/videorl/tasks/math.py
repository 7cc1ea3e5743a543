"""Text-only math: a final answer in `\\boxed{}`, checked by equivalence
(docs/methods.md#rewards).

Answer `MathAnswer`; reward `rewards/math_answer.py` (its `\\boxed{}` protocol); evaluation
accuracy; synthetic arithmetic word problems with integer answers. No video.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from videorl.data.families import Family, TaskFamily, register_family
from videorl.data.formats import final_answer
from videorl.data.prompts import math as prompt
from videorl.data.records import MathAnswer, TaskRecord, require
from videorl.data.synth import SynthDraw
from videorl.eval.scoring import score_math, summarize_math
from videorl.rewards import math_answer as reward


def answer(data: dict[str, Any], where: str) -> MathAnswer:
    return MathAnswer(str(require(data, "text", where)))


def cell_answer(raw: Any, options: tuple[str, ...], column: str) -> MathAnswer:
    """The final answer of a solution (`\\boxed{...}`, GSM8K `#### x` or the text)."""
    text = str(raw[0] if isinstance(raw, (list, tuple)) and raw else raw)
    return MathAnswer(final_answer(text))


NAMES = ("Ada", "Ben", "Chen", "Dana", "Eli", "Fatima", "Goro", "Hana")


def math_problem(rng: np.random.Generator, rid: str) -> TaskRecord:
    """An arithmetic word problem with an exact integer answer."""
    name = NAMES[int(rng.integers(len(NAMES)))]
    template = int(rng.integers(4))
    a, b = int(rng.integers(2, 10)), int(rng.integers(2, 13))
    if template == 0:
        c = int(rng.integers(1, a * b))
        problem = (
            f"{name} has {a} boxes with {b} apples in each box. {name} gives away "
            f"{c} apples. How many apples does {name} have left?"
        )
        value, subtype = a * b - c, "apples"
    elif template == 1:
        speed = int(rng.integers(3, 13)) * 10
        problem = (
            f"A train travels at {speed} km per hour for {a} hours. How many km does it travel?"
        )
        value, subtype = speed * a, "distance"
    elif template == 2:
        bill = 100 if a * b >= 50 else 50
        problem = (
            f"{name} buys {a} pens at {b} dollars each and pays with a {bill}-dollar "
            f"bill. How many dollars of change does {name} get?"
        )
        value, subtype = bill - a * b, "change"
    else:
        c = int(rng.integers(2, 20))
        problem = f"What is {c} + {a} * {b}?"
        value, subtype = c + a * b, "expression"
    return TaskRecord(
        id=rid,
        family=Family.MATH,
        problem=problem,
        answer=MathAnswer(str(value)),
        source="synth",
        subtype=subtype,
    )


def synthesize(draw: SynthDraw) -> TaskRecord:
    return math_problem(draw.rng, draw.rid)


register_family(
    TaskFamily(
        name="math",
        short="math",
        aliases=("text_math",),
        uses_video=False,
        answer=answer,
        cell_answer=cell_answer,
        prompt=prompt,
        reward=reward.score,
        serialize=reward.serialize,
        protocol=reward.BOXED_PROTOCOL,
        eval_score=score_math,
        summary=summarize_math,
        synth=synthesize,
    )
)
