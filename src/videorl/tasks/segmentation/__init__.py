"""Segmentation: a box and prompt points for a segmenter, in an image or a video
(docs/methods.md#rewards).

Answer `SegmentationAnswer` (box, 3 + 3 points, time, masks); reward
`reward.py` (OraRL's: `orarl.py`); evaluation J, F and J&F (`eval/metrics/masks.py`); synthetic
images and (odd indices) videos of two shapes.

This package is the family: this module registers what reading and prompting a record
needs; `reward`, `evaluation`, `synth` and `demo` register the rest when first asked.
"""

from __future__ import annotations

from videorl.data.families import TaskFamily, register_family
from videorl.data.records import (
    SegmentationAnswer,
)
from videorl.tasks.segmentation.prompts import orarl_segmentation
from videorl.tasks.segmentation.prompts import segmentation as prompt

ALIASES = ("refseg", "vos")
PUBLISHED = {"orarl": orarl_segmentation}
register_family(
    TaskFamily(
        "segmentation",
        "seg",
        SegmentationAnswer.from_dict,
        prompt,
        __name__,
        ALIASES,
        published=PUBLISHED,
    )
)
