"""The synthetic spatial grounding generator (`videorl synth`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from videorl.data.records import BoxAnswer, TaskRecord
from videorl.data.synth import FAMILY_SYNTHS, SynthDraw
from videorl.data.synth_tasks import box_of, grid_frame, grid_scene, save_image, synth_record


def spatial_grounding(rng: np.random.Generator, rid: str, out: Path) -> TaskRecord:
    """Box the named shape, 32 px on the patch grid (`synth_tasks.grid_scene`), in an image
    that also holds a small distractor. Until 2026-12-07 three 10-20 px shapes: each changed
    about one visual token of the tiny model, which never learned to box them (mIoU 5.0
    after SFT, blind best 5.2: docs/lab/models-that-see.md, section 15)."""
    width, height = grid_frame(rng)
    target, others = grid_scene(rng, width, height)
    image = save_image(out, rid, width, height, [target, *others])
    answer = BoxAnswer(box_of(target, width, height))
    problem = f"the {target.name}"
    return synth_record("spatial_grounding", rid, problem, answer, (width, height), image=image)


def synthesize(draw: SynthDraw) -> TaskRecord:
    return spatial_grounding(draw.rng, draw.rid, draw.out)


FAMILY_SYNTHS.register("spatial_grounding", synthesize)
