"""Records of every family and subtype, built through the generic JSON form."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from pycocotools import mask as mask_utils

from videorl.data.families import SI_CHOICE_SUBTYPES, SI_NUMERIC_SUBTYPES
from videorl.data.records import TaskRecord, record_from_dict

VIDEO = {"path": "clip.mp4"}
IMAGE = {"path": "frame.jpg"}


def make(family: str, answer: dict[str, Any], **fields: Any) -> TaskRecord:
    data = {
        "id": fields.pop("id", f"{family}-1"),
        "family": family,
        "problem": "q",
        "answer": answer,
    }
    if family != "math" and "image" not in fields:
        data["video"] = VIDEO
    data.update(fields)
    return record_from_dict(data)


def mask_rle(
    height: int = 40, width: int = 60, rows=(10, 20), cols=(20, 40), compressed: bool = True
) -> dict:
    """A rectangular mask as COCO RLE (string counts, or an uncompressed count list)."""
    pixels = np.zeros((height, width), dtype=np.uint8)
    pixels[rows[0] : rows[1], cols[0] : cols[1]] = 1
    if compressed:
        rle = mask_utils.encode(np.asfortranarray(pixels))
        return {"size": [height, width], "counts": rle["counts"].decode()}
    flat = pixels.flatten(order="F")
    counts, current, run = [], 0, 0
    for value in flat:
        if value != current:
            counts.append(run)
            current, run = int(value), 0
        run += 1
    counts.append(run)
    return {"size": [height, width], "counts": counts}


SEG_POINTS: dict[str, list[list[float]]] = {
    "positive_points": [[25, 12], [30, 15], [38.5, 18]],
    "negative_points": [[5, 5], [50, 30], [10, 35]],
}


def all_records() -> dict[str, TaskRecord]:
    """One record per family and subtype (and box format, mask, image/video variant), keyed
    and identified by name."""
    records = {
        "tg": make("temporal_grounding", {"windows": [[2.5, 7.0]]}, duration=30.0),
        "tg_multi": make(
            "temporal_grounding", {"windows": [[1, 4], [10.25, 12.125]]}, duration=20.0
        ),
        "tg_clipped": make("temporal_grounding", {"windows": [[-1.0, 45.5]]}, duration=40.0),
        "tg_no_duration": make("temporal_grounding", {"windows": [[0.1, 0.30000000000000004]]}),
        "sg_abs": make(
            "spatial_grounding", {"box": [10, 20, 110.5, 80]}, width=640, height=480, image=IMAGE
        ),
        "sg_norm": make(
            "spatial_grounding", {"box": [100, 200.25, 500, 900]}, box_format="norm1000"
        ),
        "seg_image": make("segmentation", {"box": [20, 10, 40, 20], **SEG_POINTS}, image=IMAGE),
        "seg_video": make("segmentation", {"box": [20, 10, 40, 20], "time": 3.5, **SEG_POINTS}),
        "seg_mask": make(
            "segmentation",
            {"box": [20, 10, 39, 19], **SEG_POINTS, "mask_rle": mask_rle()},
            image=IMAGE,
        ),
        "seg_mask_video": make(
            "segmentation",
            {
                "box": [20, 10, 40, 20],
                "time": 1.0,
                **SEG_POINTS,
                "mask_rle": mask_rle(compressed=False),
            },
        ),
        "seg_mask_norm": make(
            "segmentation",
            {
                "box": [333, 250, 667, 500],
                "positive_points": [[500, 375], [450, 300], [600, 450]],
                "negative_points": [[50, 50], [900, 900], [100, 800]],
                "mask_rle": mask_rle(),
            },
            box_format="norm1000",
            image=IMAGE,
        ),
        "trk": make(
            "tracking",
            {"boxes": {"0": [1, 2, 30, 40], "5": [3, 4, 33, 44], "10": [5.5, 6, 35, 46]}},
        ),
        "stg": make(
            "spatio_temporal_grounding",
            {
                "time": [1.5, 4.0],
                "boxes": {"2": [1, 2, 30, 40], "3": [3, 4, 33, 44], "3.5": [5, 6, 35, 46]},
            },
            duration=10.0,
        ),
        "qa": make("video_qa", {"letter": "B"}, options=["A. cat", "B. dog", "C. bird", "D. fish"]),
        "qa_h": make("video_qa", {"letter": "H"}),
        "math": make("math", {"text": "\\frac{1}{2}"}),
        "math_int": make("math", {"text": "42"}),
        "math_boxed_ref": make("math", {"text": "The answer is \\boxed{x^2+1}"}),
    }
    for i, subtype in enumerate(SI_NUMERIC_SUBTYPES):
        records[f"si_{subtype}"] = make(
            "spatial_intelligence", {"value": [2.75, 7, 0.35, 23.5][i]}, subtype=subtype
        )
    for i, subtype in enumerate(SI_CHOICE_SUBTYPES):
        records[f"si_{subtype}"] = make(
            "spatial_intelligence", {"letter": "ABCD"[i]}, subtype=subtype
        )
    return {name: dataclasses.replace(record, id=name) for name, record in records.items()}
