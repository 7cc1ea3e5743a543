"""The synthetic video qa generator (`videorl synth`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from videorl.data.records import LETTERS, ChoiceAnswer, TaskRecord
from videorl.data.synth import FAMILY_SYNTHS, SynthDraw
from videorl.data.synth_scene import COLORS
from videorl.data.synth_tasks import (
    appearing,
    frame_size,
    half_step,
    large_size,
    save_video,
    scatter,
    synth_record,
)


def video_qa(rng: np.random.Generator, rid: str, out: Path) -> TaskRecord:
    """`colour`: what colour is the (only) shape, 40-60% of the frame's short side;
    `order`: which colour appears first of three shapes (a third of the short side) that
    appear 1 s apart. The options are the eight colours in one fixed order, so the prompt
    says nothing about the answer (blind best: the most frequent colour, about 1 in 8) and
    the letter is a function of what is seen; with four shuffled options a tiny model must
    also match a seen colour to a colour word, which it did not learn (lab note
    docs/lab/models-that-see.md). Large shapes: a tiny model learns to see them."""
    width, height = frame_size(rng)
    if rng.integers(2) == 0:
        duration = half_step(rng, 2.0, 4.0)
        (obj,) = scatter(rng, width, height, 1, sizes=(large_size(rng, width, height),) * 2)
        media = save_video(out, rid, width, height, duration, appearing([obj], first=0.0))
        problem, subtype, color = f"What colour is the {obj.shape}?", "colour", obj.color
    else:
        duration = 4.0
        third = min(width, height) // 3 - 4  # three shapes that still fit side by side
        items = scatter(rng, width, height, 3, sizes=(third - 4, third))  # appear 0.5, 1.5, 2.5 s
        media = save_video(out, rid, width, height, duration, appearing(items))
        problem, subtype, color = "Which colour appears first?", "order", items[0].color
    options = tuple(COLORS)
    answer = ChoiceAnswer(LETTERS[options.index(color)])
    frame = (width, height)
    return synth_record(
        "video_qa", rid, problem, answer, frame, media, duration, options=options, subtype=subtype
    )


def synthesize(draw: SynthDraw) -> TaskRecord:
    return video_qa(draw.rng, draw.rid, draw.out)


FAMILY_SYNTHS.register("video_qa", synthesize)
