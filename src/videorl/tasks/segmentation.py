"""Segmentation: a box and prompt points for a segmenter, in an image or a video
(docs/methods.md#rewards).

Answer `SegmentationAnswer` (box, 3 + 3 points, time, masks); reward
`rewards/segmentation.py`; evaluation J, F and J&F (`eval/metrics/masks.py`); synthetic
images and (odd indices) videos of two shapes.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from videorl.data.families import Family, TaskFamily, register_family
from videorl.data.prompts import segmentation as prompt
from videorl.data.published_prompts import orarl_segmentation
from videorl.data.records import (
    SegmentationAnswer,
    TaskRecord,
    box_value,
    finite_number,
    frame_masks_value,
    points_value,
    require,
)
from videorl.data.synth import SynthDraw
from videorl.data.synth_scene import mask_box, mask_rle, pick_points
from videorl.data.synth_tasks import (
    frame_size,
    half_step,
    save_image,
    save_video,
    scatter,
)
from videorl.eval.scoring import score_segmentation, summarize_segmentation
from videorl.rewards import orarl_adapters
from videorl.rewards import segmentation as reward


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


def segmentation(rng: np.random.Generator, rid: str, out: Path, video: bool) -> TaskRecord:
    """Segment the named shape: box, 3 positive / 3 negative points and its COCO RLE mask.
    In a video the shape is on screen only during [t0, t1); `time` is a frame inside it."""
    width, height = frame_size(rng)
    items = scatter(rng, width, height, 2)
    target, other = items
    mask = target.mask(height, width)
    if video:
        duration = half_step(rng, 3.0, 6.0)
        t0 = half_step(rng, 0.5, duration - 1.5)
        t1 = half_step(rng, t0 + 1.0, duration - 0.5)
        time: float | None = math.floor(t0 + t1) / 2  # on the 0.5 s grid, inside [t0, t1)
        media = save_video(
            out,
            rid,
            width,
            height,
            duration,
            lambda t: [other, target] if t0 <= t < t1 else [other],
        )
    else:
        duration, time = None, None
        media = save_image(out, rid, width, height, items)
    answer = SegmentationAnswer(
        box=mask_box(mask),
        positive_points=pick_points(rng, mask, inside=True),
        negative_points=pick_points(rng, mask, inside=False),
        time=time,
        mask_rle=mask_rle(mask),
    )
    return TaskRecord(
        id=rid,
        family=Family.SEGMENTATION,
        problem=f"the {target.name}",
        answer=answer,
        video=media if video else None,
        image=None if video else media,
        duration=duration,
        subtype="video" if video else "image",
        source="synth",
        width=width,
        height=height,
    )


def synthesize(draw: SynthDraw) -> TaskRecord:
    return segmentation(draw.rng, draw.rid, draw.out, video=draw.index % 2 == 1)


register_family(
    TaskFamily(
        name="segmentation",
        short="seg",
        aliases=("refseg", "vos"),
        answer=answer,
        prompt=prompt,
        published={"orarl": orarl_segmentation},
        reward=reward.score,
        serialize=reward.serialize,
        orarl_reward=orarl_adapters.segmentation,
        eval_score=score_segmentation,
        summary=summarize_segmentation,
        sample_metric="j",
        synth=synthesize,
    )
)
