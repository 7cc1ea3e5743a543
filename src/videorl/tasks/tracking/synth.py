"""The synthetic tracking generator (`videorl synth`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from videorl.data.records import TaskRecord, TrackingAnswer
from videorl.data.synth import FAMILY_SYNTHS, SynthDraw
from videorl.data.synth_scene import Placed
from videorl.data.synth_tasks import (
    SOURCE_FPS,
    bounce,
    box_of,
    grid_frame,
    grid_scene,
    save_video,
    synth_record,
    whole_seconds,
)

TRACK_DURATION = (3, 5)  # whole seconds (`whole_seconds`): 2-4 keyed boxes, one a second


def tracking(rng: np.random.Generator, rid: str, out: Path) -> TaskRecord:
    """A shape, 32 px on the patch grid, bouncing past a small static distractor; its box in
    frame 0 is given (`extra.first_box`), its boxes at every whole second (every 8th source
    frame, each on the grid: it moves 16 or 32 px a second along each axis) are the answer.
    The video lasts 3, 4 or 5 whole seconds (`TRACK_DURATION`; 3-5 s on the 0.5 s grid until
    2026-12-07, whose 3.5 and 4.5 s videos keyed frames a 2 fps sample never shows).
    Until 2026-12-07: 10-20 px shapes in 4-8 s videos with a box every 0.5 s (~500 answer
    tokens, too long for CPU rollouts; the tiny model did not see the shapes)."""
    frame = width, height = grid_frame(rng)
    duration = whole_seconds(rng, *TRACK_DURATION)
    target, (distractor,) = grid_scene(rng, width, height)
    vx, vy = (int(v) for v in rng.choice([-4, -2, 2, 4], size=2))

    def position(frame: int) -> Placed:
        return target.moved(
            bounce(target.x + vx * frame, 0, width - target.size),
            bounce(target.y + vy * frame, 0, height - target.size),
        )

    media = save_video(
        out, rid, width, height, duration, lambda t: [distractor, position(round(t * SOURCE_FPS))]
    )
    step = SOURCE_FPS
    num_frames = round(duration * SOURCE_FPS)
    boxes = {str(f): box_of(position(f), width, height) for f in range(step, num_frames, step)}
    extra = {"first_box": list(box_of(target, width, height)), "source_fps": SOURCE_FPS}
    problem = f"the {target.name}"
    answer = TrackingAnswer(boxes)
    return synth_record("tracking", rid, problem, answer, frame, media, duration, extra=extra)


def synthesize(draw: SynthDraw) -> TaskRecord:
    return tracking(draw.rng, draw.rid, draw.out)


FAMILY_SYNTHS.register("tracking", synthesize)
