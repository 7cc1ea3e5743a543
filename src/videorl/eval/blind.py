"""The blind best: how well an answer that ignores the media can score.

A task that a prompt-only answer solves cannot show that a model looks. For each family
with such a baseline, the best *fixed* answer given what the prompt says is fitted on the
training records and scored on the validation records:

- temporal grounding: the span `[a * D, b * D]` of the stated duration D, with (a, b) on a
  grid of `GRID` maximising training mIoU (the prompt states D);
- video QA: per question text, the most frequent correct option *text* among the options
  shown, else the most frequent letter (the prompt states the question and options).

`videorl synth` writes these numbers into its manifest (`blind_best`), so the validation
set's floor is known before any model is trained.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, cast

from videorl.data.families import families
from videorl.data.records import ChoiceAnswer, TaskRecord, TemporalAnswer
from videorl.eval.metrics.temporal import query_iou, summarize

GRID = 0.025  # span ends as fractions of the duration: 0, 0.025, ..., 1


def _span_ious(records: Sequence[TaskRecord], a: float, b: float) -> list[float]:
    """tIoU of the span `[a D, b D]` on each record (all stating D: `_timed`)."""
    # blind_best hands the temporal grounding records alone: their answers are TemporalAnswer.
    return [
        query_iou(
            (a * (r.duration or 0.0), b * (r.duration or 0.0)),
            cast(TemporalAnswer, r.answer).windows,
            r.duration,
        )
        for r in records
    ]


def _timed(records: Sequence[TaskRecord]) -> list[TaskRecord]:
    """The records whose prompt states a duration (the fixed span is a fraction of it)."""
    return [r for r in records if r.duration]


def best_fixed_span(train: Sequence[TaskRecord]) -> tuple[float, float]:
    """The (a, b) fractions whose span `[a D, b D]` has the highest mean tIoU on `train`."""
    steps = round(1 / GRID)
    fractions = [k / steps for k in range(steps + 1)]
    candidates = [(a, b) for a in fractions for b in fractions if b > a]
    return max(candidates, key=lambda ab: sum(_span_ious(train, *ab)))


def blind_temporal(train: Sequence[TaskRecord], val: Sequence[TaskRecord]) -> dict[str, Any]:
    """The best fixed span fitted on `train`, its metrics (percent) on `val`; records without
    a duration are left out (none left in a split: `{}`, no baseline)."""
    train, val = _timed(train), _timed(val)
    if not train or not val:
        return {}
    a, b = best_fixed_span(train)
    return {"answer": f"[{a:g} D, {b:g} D]", **summarize(_span_ious(val, a, b))}


def blind_choice(train: Sequence[TaskRecord], val: Sequence[TaskRecord]) -> dict[str, Any]:
    """Accuracy (percent) on `val` of the most frequent correct option per question text
    (open-ended questions, `TextAnswer`, are left out; none left: accuracy 0)."""
    train = [r for r in train if isinstance(r.answer, ChoiceAnswer)]
    val = [r for r in val if isinstance(r.answer, ChoiceAnswer)]
    texts: dict[str, Counter] = {}
    letters: Counter = Counter()
    for r in train:
        letter = cast(ChoiceAnswer, r.answer).letter  # kept above: ChoiceAnswer only
        letters[letter] += 1
        index = ord(letter) - ord("A")
        if r.options and index < len(r.options):
            texts.setdefault(r.problem, Counter())[r.options[index]] += 1

    def guess(r: TaskRecord) -> str:
        for text, _ in texts.get(r.problem, Counter()).most_common():
            if r.options and text in r.options:
                return chr(ord("A") + list(r.options).index(text))
        return letters.most_common(1)[0][0] if letters else "A"

    correct = [guess(r) == cast(ChoiceAnswer, r.answer).letter for r in val]  # as train
    return {
        "answer": "most frequent option per question",
        "accuracy": 100.0 * sum(correct) / len(correct) if correct else 0.0,
    }


def blind_best(train: Sequence[TaskRecord], val: Sequence[TaskRecord]) -> dict[str, dict[str, Any]]:
    """Per family with a blind baseline and records in both splits (that it can fit: a
    family may leave records out): its validation metrics."""
    out = {}
    for family in families():
        fit = family.task.blind
        if fit is None:
            continue
        tr = [r for r in train if r.family is family]
        va = [r for r in val if r.family is family]
        if tr and va and (numbers := fit(tr, va)):
            out[family.value] = numbers
    return out
