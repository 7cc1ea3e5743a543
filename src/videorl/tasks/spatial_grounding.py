"""Spatial grounding: box the described object in an image or a frame (docs/methods.md#rewards).

Answer `BoxAnswer`; reward `rewards/spatial_grounding.py` (our tags or the model's native
`bbox_2d` JSON); evaluation box IoU; synthetic images of three shapes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from videorl.data.columns import json_cell, object_cell
from videorl.data.families import DemoParts, Family, TaskFamily, register_family
from videorl.data.prompts import spatial
from videorl.data.published_prompts import orarl_spatial
from videorl.data.records import BoxAnswer, TaskRecord, box_value, require
from videorl.data.synth import SynthDraw
from videorl.data.synth_tasks import (
    box_of,
    frame_size,
    save_image,
    scatter,
)
from videorl.eval import parsing
from videorl.eval.scoring import score_spatial, summarize_spatial
from videorl.rewards import orarl_adapters
from videorl.rewards import spatial_grounding as reward
from videorl.tasks.common import NO_BOX, demo_view


def answer(data: dict[str, Any], where: str) -> BoxAnswer:
    return BoxAnswer(box_value(require(data, "box", where), f"{where}.box"))


def cell_answer(raw: Any, options: tuple[str, ...], column: str) -> BoxAnswer:
    """A box object or a bare `[x1, y1, x2, y2]`."""
    raw = json_cell(raw)
    if isinstance(raw, (list, tuple)):
        raw = {"box": list(raw)}
    return object_cell(Family.SPATIAL_GROUNDING, raw, column)


def spatial_grounding(rng: np.random.Generator, rid: str, out: Path) -> TaskRecord:
    """Three shapes of different colours in an image; box the named one."""
    width, height = frame_size(rng)
    items = scatter(rng, width, height, 3)
    target = items[0]
    return TaskRecord(
        id=rid,
        family=Family.SPATIAL_GROUNDING,
        problem=f"the {target.name}",
        answer=BoxAnswer(box_of(target, width, height)),
        image=save_image(out, rid, width, height, items),
        source="synth",
        width=width,
        height=height,
    )


def synthesize(draw: SynthDraw) -> TaskRecord:
    return spatial_grounding(draw.rng, draw.rid, draw.out)


register_family(
    TaskFamily(
        name="spatial_grounding",
        short="sg",
        aliases=("spatial", "referring", "rec"),
        answer=answer,
        cell_answer=cell_answer,
        prompt=spatial,
        published={"orarl": orarl_spatial},
        reward=reward.score,
        serialize=reward.serialize,
        protocol=reward.NATIVE_OR_TAGGED,
        orarl_reward=orarl_adapters.spatial_grounding,
        eval_score=score_spatial,
        summary=summarize_spatial,
        sample_metric="iou",
        synth=synthesize,
        demo=DemoParts(
            label="spatial grounding",
            placeholder="the object to locate, e.g. the blue square",
            expected="<answer>[x1, y1, x2, y2]</answer>",
            blank=lambda options, meta: (BoxAnswer(NO_BOX), {}),
            parse=lambda text, options: {"box": parsing.parse_box(text)},
            view=lambda result: demo_view("spatial_view")(result),
        ),
    )
)
