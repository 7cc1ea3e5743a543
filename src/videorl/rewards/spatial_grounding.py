"""Spatial grounding (SG): one box `[x1, y1, x2, y2]` as a bare JSON list, an object with
`bbox_2d`, or a list of such objects (the first counts); task = box IoU with the ground truth
(METHODS.md 1). Boxes are compared in the record's declared `box_format` (absolute pixels or
0..1000), which is also the format the model is asked to answer in.
"""

from __future__ import annotations

from typing import Any

from videorl.data.records import BoxAnswer, TaskRecord
from videorl.rewards.config import RewardConfig
from videorl.rewards.geometry import box_iou
from videorl.rewards.payload import Box, as_box, compact_json, load_json


def parse(payload: str) -> Box | None:
    """The predicted box, else None."""
    data: Any = load_json(payload)
    if isinstance(data, list) and data and isinstance(data[0], dict):
        data = data[0]
    if isinstance(data, dict):
        data = data.get("bbox_2d")
    return as_box(data)


def score(record: TaskRecord, payload: str, config: RewardConfig) -> dict[str, float]:
    """`task` = `iou` = IoU(predicted box, ground-truth box)."""
    answer = record.answer
    assert isinstance(answer, BoxAnswer), f"record {record.id}: not a box answer"
    pred = parse(payload)
    iou = 0.0 if pred is None else box_iou(pred, answer.box)
    return {"task": iou, "iou": iou}


def serialize(record: TaskRecord) -> str:
    """The ground-truth box as a bare compact list, e.g. `[10,20,110.5,80]`."""
    answer = record.answer
    assert isinstance(answer, BoxAnswer), f"record {record.id}: not a box answer"
    return compact_json(list(answer.box))
