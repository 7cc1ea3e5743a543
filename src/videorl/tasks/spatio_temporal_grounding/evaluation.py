"""Spatio temporal grounding: how a benchmark scores it, m_tIoU and m_sIoU
(`eval/metrics/boxes.py`); the blind best is the span `[a D, b D]` of the stated duration D
maximising training tIoU, with one box (fractions of the stated frame) maximising training
IoU over every annotated second, given at every whole second of the video (sIoU reads the
answer's box nearest each annotated second), both on the grids of `tasks/fixed_answers.py`
(the prompt states D, the frame and the object's name).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from videorl.data.records import SpatioTemporalAnswer, TaskRecord
from videorl.eval.blind import fixed_metrics
from videorl.eval.metrics import boxes
from videorl.eval.scoring import FAMILY_EVALS, FamilyEval, SampleResult, Scored, values_of
from videorl.rewards.geometry import clip_window, temporal_iou
from videorl.tasks.fixed_answers import (
    Span,
    best_box,
    best_span,
    describe_box,
    frame_of,
    framed,
    span_of,
    to_fractions,
    to_frame,
)
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


def span_tiou(record: TaskRecord, fractions: Span) -> float:
    """tIoU of the span `[a D, b D]` with the record's clipped window."""
    window = record.answer_as(SpatioTemporalAnswer).time
    return temporal_iou(span_of(record, fractions), clip_window(window, record.duration))


def blind_answer(record: TaskRecord, span: Span, box: np.ndarray) -> str:
    """The span of the record's duration and `box` at every whole second of the video."""
    seconds = range(math.floor(record.duration or 0.0) + 1)
    placed = to_frame(box, frame_of(record))
    return json.dumps(
        {"time": list(span_of(record, span)), "boxes": {str(s): placed for s in seconds}}
    )


def blind_spatio_temporal(train: Sequence[TaskRecord], val: Sequence[TaskRecord]) -> dict[str, Any]:
    """The best fixed span and box fitted on `train`, their metrics on `val`; records
    stating no duration or frame are left out (none left in a split: `{}`)."""
    train = [r for r in framed(train) if r.duration]
    val = [r for r in framed(val) if r.duration]
    if not train or not val:
        return {}
    span = best_span(train, span_tiou)
    targets = [
        to_fractions(b, frame_of(r))
        for r in train
        for b in r.answer_as(SpatioTemporalAnswer).boxes.values()
    ]
    box = best_box(np.stack(targets))
    description = f"[{span[0]:g} D, {span[1]:g} D], {describe_box(box)} every second"
    return fixed_metrics(val, lambda r: blind_answer(r, span, box), description)


FAMILY_EVALS.register(
    "spatio_temporal_grounding",
    FamilyEval(
        score_spatio_temporal,
        summarize_spatio_temporal,
        sample_metric="tiou",
        blind=blind_spatio_temporal,
    ),
)
