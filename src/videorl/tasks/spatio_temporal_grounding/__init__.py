"""Spatio-temporal grounding: when, and where at each second, a described object appears
(docs/methods.md#rewards).

Answer `SpatioTemporalAnswer` (a window and boxes keyed by second); reward
`rewards/spatio_temporal_grounding.py`; evaluation m_tIoU and m_sIoU; synthetic videos of a
shape crossing the upper half.
"""

from __future__ import annotations

from typing import Any

from videorl.data.families import TaskFamily, register_family
from videorl.data.records import (
    SpatioTemporalAnswer,
    box_value,
    require,
    window_value,
)
from videorl.errors import DataError
from videorl.tasks.spatio_temporal_grounding.prompts import orarl_spatio_temporal, spatio_temporal


def answer(data: dict[str, Any], where: str) -> SpatioTemporalAnswer:
    boxes = require(data, "boxes", where)
    if not isinstance(boxes, dict):
        raise DataError(f"{where}.boxes: expected an object second -> box")
    return SpatioTemporalAnswer(
        time=window_value(require(data, "time", where), f"{where}.time"),
        boxes={str(k): box_value(v, f"{where}.boxes[{k}]") for k, v in boxes.items()},
    )


register_family(
    TaskFamily(
        name="spatio_temporal_grounding",
        short="stg",
        aliases=("stvg", "spatiotemporal_grounding"),
        answer=answer,
        prompt=spatio_temporal,
        published={"orarl": orarl_spatio_temporal},
        package=__name__,
    )
)
