"""Spatial grounding: box the described object in an image or a frame (docs/methods.md#rewards).

Answer `BoxAnswer`; reward `reward.py` (OraRL's: `orarl.py`) (our tags or the model's native
`bbox_2d` JSON); evaluation box IoU; synthetic images of three shapes.

This package is the family: this module registers what reading and prompting a record
needs; `reward`, `evaluation`, `synth` and `demo` register the rest when first asked.
"""

from __future__ import annotations

from typing import Any

from videorl.data.columns import json_cell, object_cell
from videorl.data.families import Family, TaskFamily, register_family
from videorl.data.records import BoxAnswer
from videorl.tasks.spatial_grounding.prompts import orarl_spatial, spatial


def cell_answer(raw: Any, _options: tuple[str, ...], column: str) -> BoxAnswer:
    """A box object or a bare `[x1, y1, x2, y2]`."""
    raw = json_cell(raw)
    if isinstance(raw, (list, tuple)):
        raw = {"box": list(raw)}
    return object_cell(Family("spatial_grounding"), raw, column)


ALIASES = ("spatial", "referring", "rec")
PUBLISHED = {"orarl": orarl_spatial}
register_family(
    TaskFamily(
        "spatial_grounding",
        "sg",
        BoxAnswer.from_dict,
        spatial,
        __name__,
        ALIASES,
        cell_answer=cell_answer,
        published=PUBLISHED,
    )
)
