"""Tracking: the box of an object in given frames (docs/methods.md#rewards).

Answer `TrackingAnswer` (a box per source-frame number); reward `rewards/tracking.py`;
evaluation AO and SR@0.5; synthetic videos of a bouncing shape. OraRL's template keys boxes by
second (1..32) and ours by source frame, so there is no published prompt.
"""

from __future__ import annotations

from typing import Any

from videorl.data.families import TaskFamily, register_family
from videorl.data.records import TrackingAnswer, box_value, require
from videorl.errors import DataError
from videorl.tasks.tracking.prompts import tracking as prompt


def answer(data: dict[str, Any], where: str) -> TrackingAnswer:
    boxes = require(data, "boxes", where)
    if not isinstance(boxes, dict) or not boxes:
        raise DataError(f"{where}.boxes: expected a non-empty object frame -> box")
    return TrackingAnswer({str(k): box_value(v, f"{where}.boxes[{k}]") for k, v in boxes.items()})


register_family(
    TaskFamily(
        name="tracking",
        short="trk",
        aliases=("track", "sot"),
        answer=answer,
        prompt=prompt,
        package=__name__,
    )
)
