"""OraRL's tracking reward, exactly as its adapter scores it.

Against ours (`rewards/orarl_parsing.py` says what every adapter shares; docs/fidelity.md):

- tracking: format 0 unless the payload is a JSON object whose boxes all have integer
  frame keys and readable boxes; keys match exactly; `task` is the mean box IoU over the
  ground-truth frames.
"""

from __future__ import annotations

from videorl.data.records import TaskRecord, TrackingAnswer
from videorl.rewards.orarl_parsing import (
    boxes_of,
    canonical_payload,
    coverage,
    frame_boxes,
    mean_iou,
    strict_object,
)
from videorl.rewards.registry import Components


def adapter(record: TaskRecord, response: str) -> tuple[float, Components]:
    answer = record.answer_as(TrackingAnswer)
    predicted, complete = boxes_of(strict_object(canonical_payload(response)))
    target = frame_boxes(answer.boxes)
    iou = mean_iou(predicted, target)
    return float(complete), {"task": iou, "iou": iou, "coverage": coverage(predicted, target)}
