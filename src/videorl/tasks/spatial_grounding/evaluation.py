"""Spatial grounding: how a benchmark scores it, box IoU (`eval/metrics/boxes.py`)."""

from __future__ import annotations

from collections.abc import Sequence

from videorl.data.records import BoxAnswer, TaskRecord
from videorl.eval import parsing
from videorl.eval.metrics import boxes
from videorl.eval.scoring import FAMILY_EVALS, FamilyEval, SampleResult, Scored, values_of


def score_spatial(record: TaskRecord, text: str) -> Scored:
    box = parsing.parse_box(text)
    iou = boxes.sample_box_iou(box, record.answer_as(BoxAnswer).box)
    return (None if box is None else list(box)), {"score": iou, "iou": iou}


def summarize_spatial(samples: Sequence[SampleResult]) -> dict[str, float]:
    return boxes.summarize_grounding(values_of(samples, "iou"))


FAMILY_EVALS.register(
    "spatial_grounding", FamilyEval(score_spatial, summarize_spatial, sample_metric="iou")
)
