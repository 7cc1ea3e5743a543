"""The synthetic segmentation generator (`videorl synth`)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from videorl.data.records import SegmentationAnswer, TaskRecord
from videorl.data.synth import FAMILY_SYNTHS, SynthDraw
from videorl.data.synth_scene import mask_box, mask_rle, pick_points
from videorl.data.synth_tasks import (
    grid_frame,
    grid_scene,
    half_step,
    save_image,
    save_video,
    synth_record,
)


def segmentation(rng: np.random.Generator, rid: str, out: Path, video: bool) -> TaskRecord:
    """Segment the named shape: box, 3 positive / 3 negative points and its COCO RLE mask.
    In a video the shape is on screen only during [t0, t1); `time` is a frame inside it.
    The shape is 32 px on the patch grid beside a small distractor (`synth_tasks.grid_scene`;
    until 2026-12-07 two 10-20 px shapes, too small for the tiny model's visual tokens)."""
    width, height = grid_frame(rng)
    target, (other,) = grid_scene(rng, width, height)
    items = [other, target]
    mask = target.mask(height, width)
    if video:
        duration = half_step(rng, 3.0, 6.0)
        t0 = half_step(rng, 0.5, duration - 1.5)
        t1 = half_step(rng, t0 + 1.0, duration - 0.5)
        time: float | None = math.floor(t0 + t1) / 2  # on the 0.5 s grid, inside [t0, t1)
        shown = lambda t: [other, target] if t0 <= t < t1 else [other]
        media = save_video(out, rid, width, height, duration, shown)
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
    problem = f"the {target.name}"
    frame, kind = (width, height), "video" if video else "image"
    image = None if video else media
    return synth_record(
        "segmentation",
        rid,
        problem,
        answer,
        frame,
        media if video else None,
        duration,
        image=image,
        subtype=kind,
    )


def synthesize(draw: SynthDraw) -> TaskRecord:
    return segmentation(draw.rng, draw.rid, draw.out, video=draw.index % 2 == 1)


FAMILY_SYNTHS.register("segmentation", synthesize)
