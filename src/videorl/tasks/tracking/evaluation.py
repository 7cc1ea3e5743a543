"""Tracking: how a benchmark scores it, AO and SR@0.5 (`eval/metrics/boxes.py`)."""

from __future__ import annotations

from collections.abc import Sequence

from videorl.data.records import TaskRecord, TrackingAnswer
from videorl.eval.metrics import boxes
from videorl.eval.scoring import FAMILY_EVALS, FamilyEval, SampleResult, Scored, values_of
from videorl.tasks.tracking.parsing import parse_tracking


def score_tracking(record: TaskRecord, text: str) -> Scored:
    pred = parse_tracking(text)
    values = boxes.sequence_scores(boxes.frame_ious(pred, record.answer_as(TrackingAnswer).boxes))
    prediction = None if pred is None else {str(k): list(b) for k, b in pred.items()}
    return prediction, {"score": values["ao"], **values}


def summarize_tracking(samples: Sequence[SampleResult]) -> dict[str, float]:
    return boxes.summarize_tracking(values_of(samples, "ao"), values_of(samples, "sr"))


FAMILY_EVALS.register(
    "tracking", FamilyEval(score_tracking, summarize_tracking, sample_metric="ao")
)
