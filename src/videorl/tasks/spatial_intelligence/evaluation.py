"""Spatial intelligence: how a benchmark scores it, MRA for numbers, accuracy for choices
(`eval/metrics/choice.py`); the blind best is, per question type (the record's subtype, which
the question's wording gives away), the fixed answer with the highest training score: a
number among the training answers of that type, or for choices an option text (answered by
its letter where the record shows it) or a letter.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from videorl.data.records import LETTERS, ChoiceAnswer, NumericAnswer, TaskRecord
from videorl.eval.blind import best_candidate, fixed_metrics
from videorl.eval.metrics import choice
from videorl.eval.scoring import FAMILY_EVALS, FamilyEval, SampleResult
from videorl.rewards.payload import format_number
from videorl.tasks.choice_scoring import score_choice_or_number

Fixed = tuple[str, str]  # ("number" | "letter" | "text", value)


def summarize_spatial_intelligence(samples: Sequence[SampleResult]) -> dict[str, float]:
    numeric = [bool(x.values["numeric"]) for x in samples]
    return choice.summarize_spatial(
        [x.score for x in samples], numeric, [x.subtype for x in samples]
    )


def render(record: TaskRecord, fixed: Fixed) -> str:
    """A fixed answer as this record's reply: an option text becomes its letter ("" when the
    record does not show it)."""
    kind, value = fixed
    if kind != "text":
        return value
    options = list(record.options or ())
    return LETTERS[options.index(value)] if value in options else ""


def candidates(records: Sequence[TaskRecord]) -> list[Fixed]:
    """The fixed answers tried for one question type: its training numbers, or its correct
    option texts and every letter shown."""
    out: list[Fixed] = []
    for r in records:
        if isinstance(r.answer, NumericAnswer):
            out.append(("number", format_number(r.answer.value)))
        elif isinstance(r.answer, ChoiceAnswer) and r.options:
            out.append(("text", r.options[LETTERS.index(r.answer.letter)]))
            out += [("letter", letter) for letter in LETTERS[: len(r.options)]]
    return list(dict.fromkeys(out))


def question_type(record: TaskRecord) -> str:
    return record.subtype or "all"


def blind_spatial_intelligence(
    train: Sequence[TaskRecord], val: Sequence[TaskRecord]
) -> dict[str, Any]:
    """The best fixed answer per question type fitted on `train`, its metrics on `val`;
    a question type without training records is answered "" (wrong)."""
    groups: dict[str, list[TaskRecord]] = defaultdict(list)
    for record in train:
        groups[question_type(record)].append(record)
    fits = {
        kind: best_candidate(group, candidates(group), render)
        for kind, group in sorted(groups.items())
        if candidates(group)
    }
    description = "per question type: " + ", ".join(f"{k} {v}" for k, (_, v) in fits.items())

    def answer(record: TaskRecord) -> str:
        fixed = fits.get(question_type(record))
        return "" if fixed is None else render(record, fixed)

    return fixed_metrics(val, answer, description)


FAMILY_EVALS.register(
    "spatial_intelligence",
    FamilyEval(
        score_choice_or_number, summarize_spatial_intelligence, blind=blind_spatial_intelligence
    ),
)
