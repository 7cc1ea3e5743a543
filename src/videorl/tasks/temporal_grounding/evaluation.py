"""Temporal grounding: how a benchmark scores it, R1@m and mIoU (`eval/metrics/temporal.py`);
the blind best is the span `[a D, b D]` of the stated duration D, with (a, b) on the grid of
`tasks/fixed_answers.py` maximising training mIoU (the prompt states D).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from videorl.data.records import TaskRecord, TemporalAnswer
from videorl.eval import parsing
from videorl.eval.metrics import temporal
from videorl.eval.metrics.temporal import query_iou, summarize
from videorl.eval.scoring import FAMILY_EVALS, FamilyEval, SampleResult, Scored, values_of
from videorl.tasks.fixed_answers import Span, best_span, span_of


def span_iou(record: TaskRecord, fractions: Span) -> float:
    """tIoU of the span `[a D, b D]` with the record's windows."""
    windows = record.answer_as(TemporalAnswer).windows
    return query_iou(span_of(record, fractions), windows, record.duration)


def _timed(records: Sequence[TaskRecord]) -> list[TaskRecord]:
    """The records whose prompt states a duration (the fixed span is a fraction of it)."""
    return [r for r in records if r.duration]


def best_fixed_span(train: Sequence[TaskRecord]) -> Span:
    """The (a, b) fractions whose span `[a D, b D]` has the highest mean tIoU on `train`."""
    return best_span(train, span_iou)


def blind_temporal(train: Sequence[TaskRecord], val: Sequence[TaskRecord]) -> dict[str, Any]:
    """The best fixed span fitted on `train`, its metrics (percent) on `val`; records without
    a duration are left out (none left in a split: `{}`, no baseline)."""
    train, val = _timed(train), _timed(val)
    if not train or not val:
        return {}
    a, b = best_fixed_span(train)
    return {"answer": f"[{a:g} D, {b:g} D]", **summarize([span_iou(r, (a, b)) for r in val])}


def score_temporal(record: TaskRecord, text: str) -> Scored:
    window = parsing.parse_window(text)
    iou = temporal.query_iou(window, record.answer_as(TemporalAnswer).windows, record.duration)
    return (None if window is None else list(window)), {"score": iou, "iou": iou}


def summarize_temporal(samples: Sequence[SampleResult]) -> dict[str, float]:
    return temporal.summarize(values_of(samples, "iou"))


FAMILY_EVALS.register(
    "temporal_grounding",
    FamilyEval(score_temporal, summarize_temporal, sample_metric="iou", blind=blind_temporal),
)
