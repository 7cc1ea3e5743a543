"""Tracking: the box of an object in given frames (docs/methods.md#rewards).

Answer `TrackingAnswer` (a box per source-frame number); reward `rewards/tracking.py`;
evaluation AO and SR@0.5; synthetic videos of a bouncing shape. OraRL's template keys boxes by
second (1..32) and ours by source frame, so there is no published prompt.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from videorl.data.families import DemoParts, Family, TaskFamily, register_family
from videorl.data.prompts import tracking as prompt
from videorl.data.records import TaskRecord, TrackingAnswer, box_value, require
from videorl.data.synth import SynthDraw
from videorl.data.synth_scene import Placed
from videorl.data.synth_tasks import (
    SOURCE_FPS,
    bounce,
    box_of,
    frame_size,
    half_step,
    save_video,
    scatter,
)
from videorl.errors import DataError
from videorl.eval import parsing
from videorl.eval.scoring import score_tracking, summarize_tracking
from videorl.rewards import orarl_adapters
from videorl.rewards import tracking as reward
from videorl.tasks.common import NO_BOX, demo_view


def answer(data: dict[str, Any], where: str) -> TrackingAnswer:
    boxes = require(data, "boxes", where)
    if not isinstance(boxes, dict) or not boxes:
        raise DataError(f"{where}.boxes: expected a non-empty object frame -> box")
    return TrackingAnswer({str(k): box_value(v, f"{where}.boxes[{k}]") for k, v in boxes.items()})


def tracking(rng: np.random.Generator, rid: str, out: Path) -> TaskRecord:
    """A shape bouncing around a static distractor; its box in frame 0 is given
    (`extra.first_box`), boxes every 0.5 s (every 4th source frame) are the answer."""
    width, height = frame_size(rng)
    duration = half_step(rng, 4.0, 8.0)
    distractor, target = scatter(rng, width, height, 2)
    vx, vy = (int(v) for v in rng.choice([-2, -1, 1, 2], size=2))

    def position(frame: int) -> Placed:
        return target.moved(
            bounce(target.x + vx * frame, 0, width - target.size),
            bounce(target.y + vy * frame, 0, height - target.size),
        )

    media = save_video(
        out,
        rid,
        width,
        height,
        duration,
        lambda t: [distractor, position(round(t * SOURCE_FPS))],
    )
    step = SOURCE_FPS // 2
    num_frames = round(duration * SOURCE_FPS)
    boxes = {str(f): box_of(position(f), width, height) for f in range(step, num_frames, step)}
    return TaskRecord(
        id=rid,
        family=Family.TRACKING,
        problem=f"the {target.name}",
        answer=TrackingAnswer(boxes),
        video=media,
        duration=duration,
        source="synth",
        width=width,
        height=height,
        extra={"first_box": list(box_of(target, width, height)), "source_fps": SOURCE_FPS},
    )


def synthesize(draw: SynthDraw) -> TaskRecord:
    return tracking(draw.rng, draw.rid, draw.out)


def _blank(options: tuple[str, ...], meta: Any) -> tuple[TrackingAnswer, dict[str, Any]]:
    """Boxes asked for in the demo's tracked frames of the uploaded video."""
    from videorl.demo.inference import tracked_frames

    boxes = {str(f): NO_BOX for f in tracked_frames(meta)}
    return TrackingAnswer(boxes), {"extra": {"source_fps": meta.source_fps}}


def _prediction(text: str, options: tuple[str, ...]) -> dict[str, Any]:
    tracked = parsing.parse_tracking(text) or {}
    return {"boxes": {k: b for k, b in tracked.items() if isinstance(k, float)}}


register_family(
    TaskFamily(
        name="tracking",
        short="trk",
        aliases=("track", "sot"),
        answer=answer,
        prompt=prompt,
        reward=reward.score,
        serialize=reward.serialize,
        orarl_reward=orarl_adapters.tracking,
        eval_score=score_tracking,
        summary=summarize_tracking,
        sample_metric="ao",
        synth=synthesize,
        demo=DemoParts(
            label="tracking",
            placeholder="the object to track, e.g. the green circle",
            expected='<answer>{"boxes": {"<frame>": [x1, y1, x2, y2]}}</answer>',
            blank=_blank,
            parse=_prediction,
            view=lambda result: demo_view("tracking_view")(result),
        ),
    )
)
