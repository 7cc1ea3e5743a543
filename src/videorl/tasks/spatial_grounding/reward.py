"""Spatial grounding (SG): one box `[x1, y1, x2, y2]` as a bare JSON list, an object with
`bbox_2d`, or a list of such objects (the first counts); task = box IoU with the ground truth
(docs/methods.md#rewards). Boxes are compared in the record's declared `box_format` (absolute
pixels or 0..1000), which is also the format the model is asked to answer in.

Besides the tagged answer, the Qwen-native untagged form passes the format check, as in
OraRL's reward (`orarl/rewards/adapters/spatial_grounding.py: _native_box`): after the
optional think block, the whole rest is one ```json fence holding a list of exactly one
object with `bbox_2d`.
"""

from __future__ import annotations

import re
from typing import Any

from videorl.data.records import BoxAnswer, TaskRecord
from videorl.rewards.config import RewardConfig
from videorl.rewards.geometry import box_iou
from videorl.rewards.payload import MAX_PAYLOAD_CHARS, Box, as_box, compact_json, load_json
from videorl.rewards.protocol import (
    ANSWER_OPEN,
    Extraction,
    Protocol,
    extract_tagged,
    split_think,
    wrap_tagged,
)
from videorl.rewards.registry import FAMILY_REWARDS, FamilyReward

_NATIVE_FENCE = re.compile(r"```json\s*(.*?)\s*```", re.DOTALL | re.IGNORECASE)


def parse(payload: str) -> Box | None:
    """The predicted box, else None."""
    data: Any = load_json(payload)
    if isinstance(data, list) and data and isinstance(data[0], dict):
        data = data[0]
    if isinstance(data, dict):
        data = data.get("bbox_2d")
    return as_box(data)


def score(record: TaskRecord, payload: str, _config: RewardConfig) -> dict[str, float]:
    """`task` = `iou` = IoU(predicted box, ground-truth box)."""
    answer = record.answer_as(BoxAnswer)
    pred = parse(payload)
    iou = 0.0 if pred is None else box_iou(pred, answer.box)
    return {"task": iou, "iou": iou}


def serialize(record: TaskRecord) -> str:
    """The ground-truth box as a bare compact list, e.g. `[10,20,110.5,80]`."""
    answer = record.answer_as(BoxAnswer)
    return compact_json(list(answer.box))


def native_payload(response: str, think_required: bool) -> str | None:
    """The JSON of a Qwen-native answer (```json [{"bbox_2d": [...]}]```, untagged), else None."""
    think_ok, rest = split_think(response, think_required)
    if not think_ok or ANSWER_OPEN in rest or len(rest) > MAX_PAYLOAD_CHARS:
        return None
    fence = _NATIVE_FENCE.fullmatch(rest.strip())
    if fence is None:
        return None
    data = load_json(fence.group(1))
    if not (isinstance(data, list) and len(data) == 1 and isinstance(data[0], dict)):
        return None
    return fence.group(1) if "bbox_2d" in data[0] else None


def extract(response: str, think_required: bool) -> Extraction:
    """The tagged answer (`extract_tagged`), else the Qwen-native fenced JSON."""
    tagged = extract_tagged(response, think_required)
    if tagged.ok:
        return tagged
    native = native_payload(response, think_required)
    return tagged if native is None else Extraction(True, native)


NATIVE_OR_TAGGED = Protocol(extract=extract, wrap=wrap_tagged)


from videorl.tasks.spatial_grounding import orarl

FAMILY_REWARDS.register(
    "spatial_grounding", FamilyReward(score, serialize, NATIVE_OR_TAGGED, orarl=orarl.adapter)
)
