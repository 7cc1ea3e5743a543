"""The synthetic temporal grounding generator (`videorl synth`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from videorl.data.records import DenseCaption, TaskRecord, TemporalAnswer
from videorl.data.synth import FAMILY_SYNTHS, SynthDraw
from videorl.data.synth_scene import COLORS, Placed, distinct, place
from videorl.data.synth_tasks import (
    TG_EVENTS,
    TG_GRIDS,
    article,
    frame_size,
    large_size,
    multiple_of,
    save_video,
    shape,
    synth_record,
    whole_seconds,
)

TG_DURATION = (8.0, 16.0)  # seconds, temporal grounding videos
TG_EVENT = 1.0  # seconds, the queried event's shortest length; it may last one grid step more


def tg_timing(rng: np.random.Generator, grid: float) -> tuple[float, float, float]:
    """(duration, t0, t1) seconds: a whole-second duration in `TG_DURATION`, an event of
    `TG_EVENT` or one `grid` step longer, its start on `grid` with one step of unchanged
    video before and after."""
    duration = whole_seconds(rng, *TG_DURATION)
    length = multiple_of(rng, TG_EVENT, TG_EVENT + grid, grid)
    t0 = multiple_of(rng, grid, duration - grid - length, grid)
    return duration, t0, t0 + length


def temporal_grounding(
    rng: np.random.Generator,
    rid: str,
    out: Path,
    events: tuple[str, ...] = TG_EVENTS,
    grid: float = TG_GRIDS[0],
) -> TaskRecord:
    """An event over [t0, t1) of a kind drawn from `events`: a shape is visible (on an
    empty screen otherwise), turns another colour, or moves.
    Dense captions describe every segment of the timeline.

    Distributions (so that the prompt alone does not give the answer): duration a whole
    number of seconds in [8, 16] (until 2026-12-07 on the 0.5 s grid, whose x.5 s videos a
    2 fps sample showed off the grid: `whole_seconds`); both bounds on `grid` (`TG_GRIDS`),
    the event's length 1 or 1.5 s on the 0.5 s grid (6-19% of the video), 1 or 2 s on the 1 s
    grid; start uniform on the grid with one step of unchanged video before and after. The
    best fixed span as a fraction of the stated duration scores 12-13 mIoU on 64 validation
    videos on the 0.5 s grid (`evaluation.py: blind_temporal`)."""
    frame = width, height = frame_size(rng)
    duration, t0, t1 = tg_timing(rng, grid)
    kind = events[int(rng.integers(len(events)))]
    c1, c2 = distinct(rng, list(COLORS), 2)
    size = large_size(rng, width, height)
    x, y = place(rng, size, height, width)
    x_end = x
    if kind == "move":  # across the whole frame, so every sampled frame shows the motion
        x, x_end = (2, width - size - 2) if rng.integers(2) else (width - size - 2, 2)
    obj = Placed(shape(rng), c1, x, y, size)

    def at(t: float) -> list[Placed]:
        active = t0 <= t < t1
        if kind == "appear":
            return [obj] if active else []
        if kind == "colour":
            return [obj.recoloured(c2) if active else obj]
        progress = min(max((t - t0) / (t1 - t0), 0.0), 1.0)
        return [obj.moved(round(x + (x_end - x) * progress), y)]

    thing = obj.name
    if kind == "appear":
        query = f"the {thing} is visible"
        texts = (
            "the screen is empty",
            f"{article(thing)} {thing} appears and stays still",
            "the screen is empty again",
        )
    elif kind == "colour":
        query = f"the {obj.shape} is {c2}"
        texts = (
            f"{article(thing)} {thing} sits still",
            f"the {obj.shape} turns {c2}",
            f"the {obj.shape} turns back to {c1}",
        )
    else:
        query = f"the {thing} moves"
        texts = (
            f"{article(thing)} {thing} sits still",
            f"the {thing} moves sideways",
            f"the {thing} stops and stays still",
        )
    bounds = ((0.0, t0), (t0, t1), (t1, duration))
    captions = tuple(DenseCaption(s, e, text) for (s, e), text in zip(bounds, texts, strict=True))
    video = save_video(out, rid, width, height, duration, at)
    answer = TemporalAnswer(((t0, t1),))
    return synth_record(
        "temporal_grounding",
        rid,
        query,
        answer,
        frame,
        video,
        duration,
        captions=captions,
        subtype=kind,
    )


def synthesize(draw: SynthDraw) -> TaskRecord:
    return temporal_grounding(draw.rng, draw.rid, draw.out, draw.tg_events, draw.tg_grid)


FAMILY_SYNTHS.register("temporal_grounding", synthesize)
