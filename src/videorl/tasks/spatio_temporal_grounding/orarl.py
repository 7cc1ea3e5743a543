"""OraRL's spatio temporal grounding reward, exactly as its adapter scores it.

Against ours (`rewards/orarl_parsing.py` says what every adapter shares; docs/fidelity.md):

- spatio-temporal grounding: format 0 unless the payload is a JSON object with a time
  pair (start <= end) and boxes that all have integer second keys and readable boxes;
  keys match exactly; `task` is always `0.2 tIoU + 0.8 sIoU`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from videorl.data.records import SpatioTemporalAnswer, TaskRecord
from videorl.rewards.geometry import clip_window
from videorl.rewards.orarl_parsing import (
    boxes_of,
    canonical_payload,
    coverage,
    finite_all,
    frame_boxes,
    interval_iou,
    is_sequence,
    mean_iou,
    strict_object,
)
from videorl.rewards.registry import Components

TIME_WEIGHT = 0.2


def _time_pair(value: Any) -> list[float] | None:
    if not (is_sequence(value) and len(value) == 2):
        return None
    return finite_all(value)


def adapter(record: TaskRecord, response: str) -> tuple[float, Components]:
    answer = record.answer_as(SpatioTemporalAnswer)
    data = strict_object(canonical_payload(response))
    if not isinstance(data, Mapping):
        data = None
    span = None if data is None else _time_pair(data.get("time"))
    predicted, complete = boxes_of(data)
    fmt = float(span is not None and span[0] <= span[1] and complete)
    target = frame_boxes(answer.boxes)
    tiou = interval_iou(span, list(clip_window(answer.time, record.duration)))
    siou = mean_iou(predicted, target)
    task = TIME_WEIGHT * tiou + (1.0 - TIME_WEIGHT) * siou
    components = {"task": task, "tiou": tiou, "siou": siou}
    return fmt, {**components, "coverage": coverage(predicted, target)}
