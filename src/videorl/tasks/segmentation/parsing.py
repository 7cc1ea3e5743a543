"""A segmentation answer read leniently, as `videorl eval` and the demo read it."""

from __future__ import annotations

from dataclasses import dataclass

from videorl.data.records import Box
from videorl.eval import parsing


@dataclass(frozen=True)
class SegmentationPrediction:
    """What segmentation metrics use: the predicted box (the mask is its rasterization) and,
    for video, the time it refers to."""

    box: Box | None
    time: float | None


def parse_segmentation(text: str) -> SegmentationPrediction:
    """`{"boxes": [...], "time": t, ...}` (any box key), else a bare box."""
    data = parsing.find_json(text)
    time = parsing.json_number(data.get("time")) if isinstance(data, dict) else None
    box = parsing.box_from_json(data)
    return SegmentationPrediction(box if box is not None else parsing.parse_box(text), time)
