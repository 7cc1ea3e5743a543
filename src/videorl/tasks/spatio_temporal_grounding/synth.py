"""The synthetic spatio temporal grounding generator (`videorl synth`)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from videorl.data.records import SpatioTemporalAnswer, TaskRecord
from videorl.data.synth import FAMILY_SYNTHS, SynthDraw
from videorl.data.synth_scene import COLORS, Placed, distinct
from videorl.data.synth_tasks import (
    CELL,
    box_of,
    grid_frame,
    half_step,
    save_video,
    shape,
    synth_record,
    whole_seconds,
)

STG_DURATION = (8.0, 16.0)  # seconds, the videos
STG_EVENT = (1.5, 2.5)  # seconds, the window: 1-3 whole seconds annotated inside it


def spatio_temporal_grounding(rng: np.random.Generator, rid: str, out: Path) -> TaskRecord:
    """A shape crosses the upper half during [t0, t1) while a distractor sits in the lower
    half; the answer is the window and the shape's box at each whole second inside it.

    Timed like temporal grounding (so that the prompt alone does not give the window):
    duration a whole number of seconds in [8, 16] (a 2 fps sample then shows every whole
    second: `whole_seconds`; until 2026-12-07 on the 0.5 s grid), window 1.5-2.5 s (9-31% of
    the video) starting anywhere on the grid with 0.5 s before and after. The best fixed span scores
    m_tIoU 21 on 256 validation videos (`evaluation.py: blind_spatio_temporal`); the
    generator until 2026-12-07 (windows of 2 s or more in 5-8 s videos) let it score 60.
    Both shapes are 32 px on the patch grid (`synth_tasks.CELL`), the crossing in whole
    patches, so each box is a few visual tokens of the tiny model and short in 0-1000
    coordinates (until 2026-12-07: 10-14 px shapes moving pixel by pixel)."""

    frame = width, height = grid_frame(rng)
    duration = whole_seconds(rng, *STG_DURATION)
    length = half_step(rng, *STG_EVENT)
    t0 = half_step(rng, 0.5, duration - 0.5 - length)
    t1 = t0 + length
    size = 2 * CELL
    c_target, c_other = distinct(rng, list(COLORS), 2)
    target = Placed(shape(rng), c_target, 0, _row(rng, 0, height // 2 - size), size)
    other = Placed(
        shape(rng),
        c_other,
        _row(rng, 0, width - size),
        _row(rng, height // 2, height - size),
        size,
    )
    cells = (width - size) // CELL  # the grid steps of the crossing

    def at_time(t: float) -> Placed:  # left to right in whole patches
        return target.moved(CELL * round(cells * (t - t0) / (t1 - t0)), target.y)

    def scene(t: float) -> list[Placed]:
        return [other, at_time(t)] if t0 <= t < t1 else [other]

    media = save_video(out, rid, width, height, duration, scene)
    seconds = range(math.ceil(t0), math.ceil(t1))
    boxes = {str(s): box_of(at_time(float(s)), width, height) for s in seconds}
    answer = SpatioTemporalAnswer(time=(t0, t1), boxes=boxes)
    problem = f"the {target.name}"
    return synth_record("spatio_temporal_grounding", rid, problem, answer, frame, media, duration)


def _row(rng: np.random.Generator, low: int, high: int) -> int:
    """A multiple of CELL in [low, high] (`low` a multiple of CELL)."""
    return low + CELL * int(rng.integers(0, (high - low) // CELL + 1))


def synthesize(draw: SynthDraw) -> TaskRecord:
    return spatio_temporal_grounding(draw.rng, draw.rid, draw.out)


FAMILY_SYNTHS.register("spatio_temporal_grounding", synthesize)
