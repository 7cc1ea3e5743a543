"""The synthetic spatial grounding generator (`videorl synth`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from videorl.data.records import BoxAnswer, TaskRecord
from videorl.data.synth import FAMILY_SYNTHS, SynthDraw
from videorl.data.synth_tasks import box_of, frame_size, save_image, scatter, synth_record


def spatial_grounding(rng: np.random.Generator, rid: str, out: Path) -> TaskRecord:
    """Three shapes of different colours in an image; box the named one."""
    width, height = frame_size(rng)
    items = scatter(rng, width, height, 3)
    target = items[0]
    image = save_image(out, rid, width, height, items)
    answer = BoxAnswer(box_of(target, width, height))
    problem = f"the {target.name}"
    return synth_record("spatial_grounding", rid, problem, answer, (width, height), image=image)


def synthesize(draw: SynthDraw) -> TaskRecord:
    return spatial_grounding(draw.rng, draw.rid, draw.out)


FAMILY_SYNTHS.register("spatial_grounding", synthesize)
