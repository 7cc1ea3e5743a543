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
    frame_size,
    half_step,
    save_video,
    scatter,
    synth_record,
)


def tracking(rng: np.random.Generator, rid: str, out: Path) -> TaskRecord:
    """A shape bouncing around a static distractor; its box in frame 0 is given
    (`extra.first_box`), boxes every 0.5 s (every 4th source frame) are the answer."""
    frame = width, height = frame_size(rng)
    duration = half_step(rng, 4.0, 8.0)
    distractor, target = scatter(rng, width, height, 2)
    vx, vy = (int(v) for v in rng.choice([-2, -1, 1, 2], size=2))

    def position(frame: int) -> Placed:
        return target.moved(
            bounce(target.x + vx * frame, 0, width - target.size),
            bounce(target.y + vy * frame, 0, height - target.size),
        )

    media = save_video(
        out, rid, width, height, duration, lambda t: [distractor, position(round(t * SOURCE_FPS))]
    )
    step = SOURCE_FPS // 2
    num_frames = round(duration * SOURCE_FPS)
    boxes = {str(f): box_of(position(f), width, height) for f in range(step, num_frames, step)}
    extra = {"first_box": list(box_of(target, width, height)), "source_fps": SOURCE_FPS}
    problem = f"the {target.name}"
    answer = TrackingAnswer(boxes)
    return synth_record("tracking", rid, problem, answer, frame, media, duration, extra=extra)


def synthesize(draw: SynthDraw) -> TaskRecord:
    return tracking(draw.rng, draw.rid, draw.out)


FAMILY_SYNTHS.register("tracking", synthesize)
