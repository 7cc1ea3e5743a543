"""OraRL's tracking reward, exactly as its adapter scores it.

Re-implemented from `orarl/rewards/adapters/*.py` in HVision-NKU/OraRL (commit e3903be)
(`reward.mode: orarl`; the router sets `overall = task * format` as OraRL does); the
answer is read as `orarl_parsing.canonical_payload` does (several `</think>` tags allowed,
tags in any case, the payload stripped). Against ours (docs/fidelity.md):

- tracking / spatio-temporal grounding: format 0 unless the payload is a JSON object
  whose boxes all have integer frame (second) keys and readable boxes (and, for STG, a
  time pair with start <= end); keys match exactly; STG is always `0.2 tIoU + 0.8 sIoU`;
"""

from __future__ import annotations

from videorl.data.records import (
    TaskRecord,
    TrackingAnswer,
)
from videorl.rewards.orarl_parsing import (
    boxes_of,
    canonical_payload,
    coverage,
    frame_boxes,
    mean_iou,
    strict_object,
)

Components = dict[str, float]


def adapter(record: TaskRecord, response: str) -> tuple[float, Components]:
    answer = record.answer
    assert isinstance(answer, TrackingAnswer), f"record {record.id}: not a tracking answer"
    predicted, complete = boxes_of(strict_object(canonical_payload(response)))
    target = frame_boxes(answer.boxes)
    iou = mean_iou(predicted, target)
    return float(complete), {"task": iou, "iou": iou, "coverage": coverage(predicted, target)}
