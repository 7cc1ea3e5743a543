"""Tracking (TRK): payload JSON `{"boxes": {"<frame>": [x1, y1, x2, y2], ...}}` keyed by
source frame number; task = mean IoU over all ground-truth frames, a missing frame counts 0
(docs/methods.md#rewards). Keys match numerically (`"12"` = `"12.0"`); predicted frames that are
not in the ground truth are ignored.
"""

from __future__ import annotations

from typing import Any

from videorl.data.records import TaskRecord, TrackingAnswer
from videorl.rewards.config import RewardConfig
from videorl.rewards.geometry import box_iou
from videorl.rewards.payload import compact_json, key_value, keyed_boxes, load_json
from videorl.rewards.protocol import TAGGED
from videorl.rewards.registry import FAMILY_REWARDS, FamilyReward


def score(record: TaskRecord, payload: str, _config: RewardConfig) -> dict[str, float]:
    """`task` = `iou` = mean frame IoU; `coverage` = fraction of ground-truth frames predicted."""
    answer = record.answer_as(TrackingAnswer)
    data: Any = load_json(payload)
    pred = keyed_boxes(data.get("boxes")) if isinstance(data, dict) else {}
    ious, found = [], 0
    for frame, gt_box in answer.boxes.items():
        box = pred.get(key_value(frame))
        found += box is not None
        ious.append(0.0 if box is None else box_iou(box, gt_box))
    iou = sum(ious) / len(ious) if ious else 0.0
    return {"task": iou, "iou": iou, "coverage": found / len(ious) if ious else 0.0}


def serialize(record: TaskRecord) -> str:
    """The ground-truth boxes as compact JSON, keys as in the record."""
    answer = record.answer_as(TrackingAnswer)
    return compact_json({"boxes": {frame: list(box) for frame, box in answer.boxes.items()}})


from videorl.tasks.tracking import orarl

FAMILY_REWARDS.register("tracking", FamilyReward(score, serialize, TAGGED, orarl=orarl.adapter))
