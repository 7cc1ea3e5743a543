"""Segmentation: a box and prompt points for a segmenter, in an image or a video
(docs/methods.md#rewards).

Answer `SegmentationAnswer` (box, 3 + 3 points, time, masks); reward
`rewards/segmentation.py`; evaluation J, F and J&F (`eval/metrics/masks.py`); synthetic
images and (odd indices) videos of two shapes.
"""

from __future__ import annotations

from typing import Any

from videorl.data.families import TaskFamily, register_family
from videorl.data.records import (
    SegmentationAnswer,
    box_value,
    finite_number,
    frame_masks_value,
    points_value,
    require,
)
from videorl.tasks.segmentation.prompts import orarl_segmentation
from videorl.tasks.segmentation.prompts import segmentation as prompt


def answer(data: dict[str, Any], where: str) -> SegmentationAnswer:
    time = data.get("time")
    return SegmentationAnswer(
        box=box_value(require(data, "box", where), f"{where}.box"),
        positive_points=points_value(
            require(data, "positive_points", where), f"{where}.positive_points"
        ),
        negative_points=points_value(
            require(data, "negative_points", where), f"{where}.negative_points"
        ),
        time=None if time is None else finite_number(time, f"{where}.time"),
        mask_rle=data.get("mask_rle"),
        frame_masks=frame_masks_value(data.get("frame_masks"), f"{where}.frame_masks"),
    )


register_family(
    TaskFamily(
        name="segmentation",
        short="seg",
        aliases=("refseg", "vos"),
        answer=answer,
        prompt=prompt,
        published={"orarl": orarl_segmentation},
        package=__name__,
    )
)
