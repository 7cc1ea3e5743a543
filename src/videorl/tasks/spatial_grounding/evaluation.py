"""Spatial grounding: how a benchmark scores it, box IoU (`eval/metrics/boxes.py`); the blind
best is one box as fractions of the frame the prompt states, on the grid of
`tasks/fixed_answers.py`, maximising training IoU (the prompt states the frame and the
object's name; the synthetic objects sit anywhere).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from videorl.data.records import BoxAnswer, TaskRecord
from videorl.eval import parsing
from videorl.eval.blind import fixed_metrics
from videorl.eval.metrics import boxes
from videorl.eval.scoring import FAMILY_EVALS, FamilyEval, SampleResult, Scored, values_of
from videorl.tasks.fixed_answers import (
    best_box,
    describe_box,
    frame_of,
    framed,
    to_fractions,
    to_frame,
)


def score_spatial(record: TaskRecord, text: str) -> Scored:
    box = parsing.parse_box(text)
    iou = boxes.sample_box_iou(box, record.answer_as(BoxAnswer).box)
    return (None if box is None else list(box)), {"score": iou, "iou": iou}


def summarize_spatial(samples: Sequence[SampleResult]) -> dict[str, float]:
    return boxes.summarize_grounding(values_of(samples, "iou"))


def blind_spatial(train: Sequence[TaskRecord], val: Sequence[TaskRecord]) -> dict[str, Any]:
    """The best fixed box (fractions of the stated frame) fitted on `train`, its metrics on
    `val`; records stating no frame are left out (none left in a split: `{}`)."""
    train, val = framed(train), framed(val)
    if not train or not val:
        return {}
    fit = best_box(np.stack([to_fractions(r.answer_as(BoxAnswer).box, frame_of(r)) for r in train]))
    return fixed_metrics(val, lambda r: str(to_frame(fit, frame_of(r))), describe_box(fit))


FAMILY_EVALS.register(
    "spatial_grounding",
    FamilyEval(score_spatial, summarize_spatial, sample_metric="iou", blind=blind_spatial),
)
