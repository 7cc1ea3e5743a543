"""Spatio temporal grounding: how a benchmark scores it, m_tIoU and m_sIoU (`eval/metrics/boxes.py`)."""

from __future__ import annotations

from collections.abc import Sequence

from videorl.data.records import SpatioTemporalAnswer, TaskRecord
from videorl.eval.metrics import boxes
from videorl.eval.scoring import FAMILY_EVALS, FamilyEval, SampleResult, Scored, values_of
from videorl.tasks.spatio_temporal_grounding.parsing import parse_spatio_temporal


def score_spatio_temporal(record: TaskRecord, text: str) -> Scored:
    answer = record.answer_as(SpatioTemporalAnswer)
    pred = parse_spatio_temporal(text)
    window = None if pred is None else pred.window
    values = boxes.spatio_temporal_scores(
        window, {} if pred is None else pred.boxes, answer.time, answer.boxes, record.duration
    )
    prediction = (
        None
        if pred is None
        else {
            "time": None if window is None else list(window),
            "boxes": {f"{k:g}": list(b) for k, b in pred.boxes.items()},
        }
    )
    return prediction, {"score": (values["tiou"] + values["siou"]) / 2, **values}


def summarize_spatio_temporal(samples: Sequence[SampleResult]) -> dict[str, float]:
    return boxes.summarize_spatio_temporal(values_of(samples, "tiou"), values_of(samples, "siou"))


FAMILY_EVALS.register(
    "spatio_temporal_grounding",
    FamilyEval(score_spatio_temporal, summarize_spatio_temporal, sample_metric="tiou"),
)
