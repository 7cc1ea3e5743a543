"""Segmentation: how a benchmark scores it, J, F and J&F (`eval/metrics/masks.py`); the blind
best is one box as fractions of the frame the prompt states, on the grid of
`tasks/fixed_answers.py`, maximising the training J of its rasterization (the prompt states
the frame, the object's name and whether it is a video; the synthetic objects sit anywhere,
and the time a video answer names does not enter J or F).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from videorl.data.records import SegmentationAnswer, TaskRecord
from videorl.eval.blind import fixed_metrics
from videorl.eval.metrics import masks
from videorl.eval.scoring import FAMILY_EVALS, FamilyEval, SampleResult, Scored, values_of
from videorl.tasks.fixed_answers import (
    candidate_boxes,
    describe_box,
    frame_of,
    framed,
    to_frame,
)
from videorl.tasks.segmentation.parsing import parse_segmentation


def score_segmentation(record: TaskRecord, text: str) -> Scored:
    answer = record.answer_as(SegmentationAnswer)
    pred = parse_segmentation(text)
    values = masks.segmentation_scores(
        pred.box, answer, record.box_format, (record.width, record.height)
    )
    values["video"] = float(answer.time is not None)
    prediction = None if pred.box is None else {"box": list(pred.box), "time": pred.time}
    return prediction, {"score": values["j"], **values}


def summarize_segmentation(samples: Sequence[SampleResult]) -> dict[str, float]:
    video = [s for s in samples if s.values["video"]]
    image = [s for s in samples if not s.values["video"]]
    out: dict[str, float] = {}
    if video:
        out.update(masks.summarize_video(values_of(video, "j"), values_of(video, "f")))
    if image:
        out.update(
            masks.summarize_image(
                values_of(image, "j"), values_of(image, "inter"), values_of(image, "union")
            )
        )
    return out


def mask_jaccards(candidates: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """J of each candidate box (K x 4, fractions of the mask's frame) rasterized as
    `masks.rasterize_box` does (the pixels whose centres lie inside), with `mask` (H x W):
    the pixels of the mask inside a box are a sum over the summed-area table
    `S[r, c] = sum(mask[:r, :c])`; `J = inter / (box + mask - inter)`."""
    height, width = mask.shape
    table = np.zeros((height + 1, width + 1))
    table[1:, 1:] = mask.cumsum(0).cumsum(1)
    scale = np.array([width, height, width, height])
    pixels = candidates * scale - 0.5  # pixel c is inside [x1, x2] iff x1 - 0.5 <= c <= x2 - 0.5
    low = np.clip(np.ceil(pixels[:, :2]), 0, [width, height]).astype(int)  # first inside
    high = np.clip(np.floor(pixels[:, 2:]) + 1, 0, [width, height]).astype(int)  # past the last
    high = np.maximum(high, low)
    (c0, r0), (c1, r1) = low.T, high.T
    inter = table[r1, c1] - table[r0, c1] - table[r1, c0] + table[r0, c0]
    union = (c1 - c0) * (r1 - r0) + mask.sum() - inter
    return np.divide(inter, union, out=np.ones_like(inter), where=union > 0)


def best_mask_box(train: Sequence[TaskRecord]) -> np.ndarray:
    """The candidate box (fractions of the frame) with the highest summed J over `train`."""
    candidates = candidate_boxes()
    totals = np.zeros(len(candidates))
    for record in train:
        frame = (record.width, record.height)
        mask = masks.ground_truth_mask(
            record.answer_as(SegmentationAnswer), record.box_format, frame
        )
        totals += mask_jaccards(candidates, mask)
    return candidates[int(np.argmax(totals))]


def blind_segmentation(train: Sequence[TaskRecord], val: Sequence[TaskRecord]) -> dict[str, Any]:
    """The best fixed box (fractions of the stated frame) fitted on `train`, its metrics on
    `val`; records stating no frame are left out (none left in a split: `{}`)."""
    train, val = framed(train), framed(val)
    if not train or not val:
        return {}
    fit = best_mask_box(train)

    def answer(record: TaskRecord) -> str:
        return json.dumps({"boxes": to_frame(fit, frame_of(record))})

    return fixed_metrics(val, answer, describe_box(fit))


FAMILY_EVALS.register(
    "segmentation",
    FamilyEval(
        score_segmentation, summarize_segmentation, sample_metric="j", blind=blind_segmentation
    ),
)
