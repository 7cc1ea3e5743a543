"""A tracking answer read leniently, as `videorl eval` and the demo read it."""

from __future__ import annotations

from videorl.data.records import Box
from videorl.eval import parsing


def parse_tracking(text: str) -> dict[float | str, Box] | None:
    """Frame -> box from `{"boxes": {...}}` or a bare `{frame: box}` object; None if none."""
    boxes = parsing.keyed_boxes(parsing.find_json(text))
    return boxes or None
