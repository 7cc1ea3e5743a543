"""The synthetic math generator (`videorl synth`)."""

from __future__ import annotations

import numpy as np

from videorl.data.records import MathAnswer, TaskRecord
from videorl.data.synth import FAMILY_SYNTHS, SynthDraw
from videorl.data.synth_tasks import synth_record

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
    return synth_record("math", rid, problem, MathAnswer(str(value)), subtype=subtype)


def synthesize(draw: SynthDraw) -> TaskRecord:
    return math_problem(draw.rng, draw.rid)


FAMILY_SYNTHS.register("math", synthesize)
