"""Spatio-temporal grounding (STG): payload JSON `{"time": [t0, t1], "boxes": {"<sec>": [x1,
y1, x2, y2], ...}}`; task = `0.2 * tIoU + 0.8 * mean box IoU over ground-truth frames`, a
missing frame counts 0 (docs/methods.md#rewards).

Second keys match numerically: each ground-truth second takes the nearest predicted second
within 0.5 s (ties to the earlier one). A record without ground-truth boxes scores tIoU alone.
"""

from __future__ import annotations

from typing import Any

from videorl.data.records import SpatioTemporalAnswer, TaskRecord
from videorl.rewards.config import RewardConfig
from videorl.rewards.geometry import box_iou, clip_window, nearest_box, temporal_iou
from videorl.rewards.payload import as_window, compact_json, key_value, keyed_boxes, load_json
from videorl.rewards.protocol import TAGGED
from videorl.rewards.registry import FAMILY_REWARDS, FamilyReward

TIME_WEIGHT, SPACE_WEIGHT = 0.2, 0.8


def score(record: TaskRecord, payload: str, _config: RewardConfig) -> dict[str, float]:
    """`task`, `tiou`, `siou` (mean box IoU over ground-truth seconds) and `coverage`."""
    answer = record.answer_as(SpatioTemporalAnswer)
    data: Any = load_json(payload)
    if not isinstance(data, dict):
        data = {}
    window = as_window(data.get("time"))
    tiou = (
        0.0 if window is None else temporal_iou(window, clip_window(answer.time, record.duration))
    )
    pred = {k: box for k, box in keyed_boxes(data.get("boxes")).items() if isinstance(k, float)}
    ious, found = [], 0
    for second, gt_box in answer.boxes.items():
        at = key_value(second)
        box = nearest_box(pred, at) if isinstance(at, float) else None
        found += box is not None
        ious.append(0.0 if box is None else box_iou(box, gt_box))
    if not ious:
        return {"task": tiou, "tiou": tiou, "siou": 0.0, "coverage": 0.0}
    siou = sum(ious) / len(ious)
    task = TIME_WEIGHT * tiou + SPACE_WEIGHT * siou
    return {"task": task, "tiou": tiou, "siou": siou, "coverage": found / len(ious)}


def serialize(record: TaskRecord) -> str:
    """The (clipped) window and the ground-truth boxes as compact JSON."""
    answer = record.answer_as(SpatioTemporalAnswer)
    window = clip_window(answer.time, record.duration)
    return compact_json(
        {"time": list(window), "boxes": {s: list(b) for s, b in answer.boxes.items()}}
    )


from videorl.tasks.spatio_temporal_grounding import orarl

FAMILY_REWARDS.register(
    "spatio_temporal_grounding", FamilyReward(score, serialize, TAGGED, orarl=orarl.adapter)
)
