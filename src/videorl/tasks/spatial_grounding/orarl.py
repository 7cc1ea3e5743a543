"""OraRL's spatial grounding reward, exactly as its adapter scores it.

Against ours (`rewards/orarl_parsing.py` says what every adapter shares; docs/fidelity.md):

- spatial grounding: a tagged payload passes the format check when any box can be read
  from it (JSON, `(x1, y1), (x2, y2)`, or the last four numbers); the Qwen-native fenced
  JSON also when it is the last answer block;
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from videorl.data.records import BoxAnswer, TaskRecord
from videorl.rewards.orarl_parsing import (
    NUMBER,
    box,
    box_iou,
    canonical_payload,
    json_value,
    last_answer_block,
    unfence,
    without_reasoning,
)
from videorl.rewards.registry import Components

_NATIVE = re.compile(r"\s*```json\s*(.*?)\s*```\s*", re.DOTALL | re.IGNORECASE)
_CORNERS = re.compile(
    rf"\(\s*({NUMBER})\s*,\s*({NUMBER})\s*\)\s*,?\s*\(\s*({NUMBER})\s*,\s*({NUMBER})\s*\)"
)


def lenient_box(value: Any) -> list[float] | None:
    """A box from JSON, else from `(x1, y1), (x2, y2)`, else from the last four numbers."""
    found = box(json_value(value))
    if found is not None:
        return found
    text = last_answer_block(value)
    corners = _CORNERS.search(text)
    if corners is not None:
        return [float(number) for number in corners.groups()]
    numbers = re.findall(NUMBER, text)
    return [float(number) for number in numbers[-4:]] if len(numbers) >= 4 else None


def _native_box(text: str) -> list[float] | None:
    fenced = _NATIVE.fullmatch(text)
    if fenced is None:
        return None
    try:
        data = json.loads(fenced.group(1))
    except ValueError:
        return None
    if isinstance(data, list) and len(data) == 1 and isinstance(data[0], Mapping):
        return box(data[0]["bbox_2d"]) if "bbox_2d" in data[0] else None
    return None


def adapter(record: TaskRecord, response: str) -> tuple[float, Components]:
    answer = record.answer_as(BoxAnswer)
    final = without_reasoning(response)
    predicted, fmt = _native_box(final), 1.0
    if predicted is None:
        tagged = canonical_payload(response)
        predicted = None if tagged is None else lenient_box(tagged)
    if predicted is None:
        predicted, fmt = lenient_box(unfence(final)), 0.0
    iou = box_iou(predicted, list(answer.box))
    return fmt, {"task": iou, "iou": iou}
