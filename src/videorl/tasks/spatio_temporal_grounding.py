"""Spatio-temporal grounding: when, and where at each second, a described object appears
(docs/methods.md#rewards).

Answer `SpatioTemporalAnswer` (a window and boxes keyed by second); reward
`rewards/spatio_temporal_grounding.py`; evaluation m_tIoU and m_sIoU; synthetic videos of a
shape crossing the upper half.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from videorl.data.families import DemoParts, Family, TaskFamily, register_family
from videorl.data.prompts import spatio_temporal
from videorl.data.published_prompts import orarl_spatio_temporal
from videorl.data.records import (
    SpatioTemporalAnswer,
    TaskRecord,
    box_value,
    require,
    window_value,
)
from videorl.data.synth import SynthDraw
from videorl.data.synth_scene import COLORS, Placed, distinct
from videorl.data.synth_tasks import (
    box_of,
    frame_size,
    half_step,
    save_video,
    shape,
)
from videorl.errors import DataError
from videorl.eval import parsing
from videorl.eval.scoring import score_spatio_temporal, summarize_spatio_temporal
from videorl.rewards import orarl_adapters
from videorl.rewards import spatio_temporal_grounding as reward
from videorl.tasks.common import NO_BOX, demo_view


def answer(data: dict[str, Any], where: str) -> SpatioTemporalAnswer:
    boxes = require(data, "boxes", where)
    if not isinstance(boxes, dict):
        raise DataError(f"{where}.boxes: expected an object second -> box")
    return SpatioTemporalAnswer(
        time=window_value(require(data, "time", where), f"{where}.time"),
        boxes={str(k): box_value(v, f"{where}.boxes[{k}]") for k, v in boxes.items()},
    )


def spatio_temporal_grounding(rng: np.random.Generator, rid: str, out: Path) -> TaskRecord:
    """A shape crosses the upper half during [t0, t1) while a distractor sits in the lower
    half; the answer is the window and the shape's box at each whole second inside it."""
    width, height = frame_size(rng)
    duration = half_step(rng, 5.0, 8.0)
    t0 = half_step(rng, 0.5, duration - 3.0)
    t1 = half_step(rng, t0 + 2.0, duration - 0.5)
    size = int(rng.integers(10, 15))
    c_target, c_other = distinct(rng, list(COLORS), 2)
    y = int(rng.integers(0, height // 2 - size + 1))
    target = Placed(shape(rng), c_target, 2, y, size)
    x_end = width - size - 2
    other = Placed(
        shape(rng),
        c_other,
        int(rng.integers(0, width - size + 1)),
        int(rng.integers(height // 2, height - size + 1)),
        size,
    )

    def at_time(t: float) -> Placed:
        return target.moved(round(2 + (x_end - 2) * (t - t0) / (t1 - t0)), y)

    media = save_video(
        out,
        rid,
        width,
        height,
        duration,
        lambda t: [other, at_time(t)] if t0 <= t < t1 else [other],
    )
    seconds = range(math.ceil(t0), math.ceil(t1))
    boxes = {str(s): box_of(at_time(float(s)), width, height) for s in seconds}
    return TaskRecord(
        id=rid,
        family=Family.SPATIO_TEMPORAL_GROUNDING,
        problem=f"the {target.name}",
        answer=SpatioTemporalAnswer(time=(t0, t1), boxes=boxes),
        video=media,
        duration=duration,
        source="synth",
        width=width,
        height=height,
    )


def synthesize(draw: SynthDraw) -> TaskRecord:
    return spatio_temporal_grounding(draw.rng, draw.rid, draw.out)


def _prediction(text: str, options: tuple[str, ...]) -> dict[str, Any]:
    found = parsing.parse_spatio_temporal(text)
    return {} if found is None else {"window": found.window, "boxes": found.boxes}


register_family(
    TaskFamily(
        name="spatio_temporal_grounding",
        short="stg",
        aliases=("stvg", "spatiotemporal_grounding"),
        answer=answer,
        prompt=spatio_temporal,
        published={"orarl": orarl_spatio_temporal},
        reward=reward.score,
        serialize=reward.serialize,
        orarl_reward=orarl_adapters.spatio_temporal_grounding,
        eval_score=score_spatio_temporal,
        summary=summarize_spatio_temporal,
        sample_metric="tiou",
        synth=synthesize,
        demo=DemoParts(
            label="spatio-temporal grounding",
            placeholder="the object to find in time and space",
            expected='<answer>{"time": [t0, t1], "boxes": {...}}</answer>',
            blank=lambda options, meta: (
                SpatioTemporalAnswer(time=(0.0, 0.0), boxes={"0": NO_BOX}),
                {},
            ),
            parse=_prediction,
            view=lambda result: demo_view("spatio_temporal_view")(result),
        ),
    )
)
