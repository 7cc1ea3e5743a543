"""The blind best: how well an answer that ignores the media can score.

A task that a prompt-only answer solves cannot show that a model looks. For each family
with such a baseline (`FamilyEval.blind`, in `tasks/<family>/evaluation.py`), the best
*fixed* answer given what the prompt says is fitted on the training records and scored on
the validation records.

A family's fit answers every validation record with text the family's own evaluation
scorer reads (`fixed_metrics`), so the numbers are the metrics `videorl eval` reports.
`videorl synth` writes these numbers into its manifest (`blind_best`), so the validation
set's floor is known before any model is trained.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from videorl.data.families import families
from videorl.data.records import TaskRecord
from videorl.eval.scoring import FAMILY_EVALS, score_record

T = TypeVar("T")


def blind_best(train: Sequence[TaskRecord], val: Sequence[TaskRecord]) -> dict[str, dict[str, Any]]:
    """Per family with a blind baseline and records in both splits (that it can fit: a
    family may leave records out): its validation metrics."""
    out = {}
    for family in families():
        fit = FAMILY_EVALS[family].blind
        if fit is None:
            continue
        tr = [r for r in train if r.family == family]
        va = [r for r in val if r.family == family]
        if tr and va and (numbers := fit(tr, va)):
            out[family.value] = numbers
    return out


def fixed_metrics(
    val: Sequence[TaskRecord], answer: Callable[[TaskRecord], str], description: str
) -> dict[str, Any]:
    """The family's evaluation metrics (percent) when each record of `val` (one family) is
    answered `answer(record)`, with `description` of that answer under "answer"."""
    samples = [score_record(r, answer(r)) for r in val]
    return {"answer": description, **FAMILY_EVALS[val[0].family].summary(samples)}


def best_candidate(
    train: Sequence[TaskRecord], candidates: Iterable[T], render: Callable[[TaskRecord, T], str]
) -> T:
    """The candidate whose answers `render(record, candidate)` have the highest summed
    per-sample score (the family's evaluation scorer) on `train`; the first on ties."""
    pool = list(candidates)
    if not pool:
        raise ValueError("best_candidate: no candidates")
    totals = [sum(score_record(r, render(r, c)).score for r in train) for c in pool]
    return pool[totals.index(max(totals))]
