"""Math: how a benchmark scores it, accuracy of the final `\\boxed{}` answer, by equivalence."""

from __future__ import annotations

from collections.abc import Sequence

from videorl.data.records import TaskRecord
from videorl.eval.metrics import choice
from videorl.eval.scoring import FAMILY_EVALS, FamilyEval, SampleResult, Scored, values_of
from videorl.rewards.protocol import last_boxed
from videorl.tasks.math.reward import is_equivalent, reference_answer


def score_math(record: TaskRecord, text: str) -> Scored:
    final = last_boxed(text) or text.strip()
    if not final:
        return None, {"score": 0.0, "correct": 0.0}
    correct = float(is_equivalent(reference_answer(record), final))
    return final, {"score": correct, "correct": correct}


def summarize_math(samples: Sequence[SampleResult]) -> dict[str, float]:
    return {"accuracy": choice.mean_percent(values_of(samples, "correct"))}


FAMILY_EVALS.register("math", FamilyEval(score_math, summarize_math))
