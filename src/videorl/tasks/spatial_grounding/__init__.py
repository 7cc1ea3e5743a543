"""Spatial grounding: box the described object in an image or a frame (docs/methods.md#rewards).

Answer `BoxAnswer`; reward `rewards/spatial_grounding.py` (our tags or the model's native
`bbox_2d` JSON); evaluation box IoU; synthetic images of three shapes.
"""

from __future__ import annotations

from typing import Any

from videorl.data.columns import json_cell, object_cell
from videorl.data.families import Family, TaskFamily, register_family
from videorl.data.records import BoxAnswer, box_value, require
from videorl.tasks.spatial_grounding.prompts import orarl_spatial, spatial


def answer(data: dict[str, Any], where: str) -> BoxAnswer:
    return BoxAnswer(box_value(require(data, "box", where), f"{where}.box"))


def cell_answer(raw: Any, options: tuple[str, ...], column: str) -> BoxAnswer:
    """A box object or a bare `[x1, y1, x2, y2]`."""
    raw = json_cell(raw)
    if isinstance(raw, (list, tuple)):
        raw = {"box": list(raw)}
    return object_cell(Family("spatial_grounding"), raw, column)


register_family(
    TaskFamily(
        name="spatial_grounding",
        short="sg",
        aliases=("spatial", "referring", "rec"),
        answer=answer,
        cell_answer=cell_answer,
        prompt=spatial,
        published={"orarl": orarl_spatial},
        package=__name__,
    )
)
