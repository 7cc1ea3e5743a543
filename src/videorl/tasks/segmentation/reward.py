"""Segmentation (SEG): payload JSON `{"boxes": [x1, y1, x2, y2], "positive_points": [[x, y]
x3], "negative_points": [[x, y] x3], "time": t}` (`time` for video).
docs/methods.md#segmentation-score:

- without a mask: point similarity `sim = exp(-d^2 / (2 * 50^2))`, d the mean distance under
  the best matching of predicted to ground-truth points (all pairings), `time_sim =
  exp(-|dt| / 2)`; image `0.50*boxIoU + 0.25*pos + 0.25*neg`, video `0.35*boxIoU +
  0.10*time + 0.40*pos + 0.15*neg`;
- with a COCO RLE mask: box term IoU(pred box, mask bbox), positive term the fraction of
  positive points inside the mask (3 px tolerance), negative term the fraction of negative
  points outside; capped at 0.10 with no positive point inside, at 0.20 with box IoU < 0.10.

A sample is video when its ground truth has a time. Point fractions divide by the larger of
the predicted and expected counts, so fewer or extra points cannot raise the score.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

from videorl.data.records import SegmentationAnswer, TaskRecord
from videorl.rewards.config import RewardConfig
from videorl.rewards.geometry import box_iou
from videorl.rewards.masks import Mask, load_mask
from videorl.rewards.payload import Box, Point, as_box, as_points, compact_json, finite, load_json
from videorl.rewards.protocol import TAGGED
from videorl.rewards.registry import FAMILY_REWARDS, FamilyReward

# Weights in percent, so that a perfect answer sums to exactly 100 / 100 = 1.0.
IMAGE_WEIGHTS = {"iou": 50, "pos": 25, "neg": 25}
VIDEO_WEIGHTS = {"iou": 35, "time": 10, "pos": 40, "neg": 15}
POINT_SIGMA = 50.0
TOLERANCE_PX = 3
NO_POSITIVE_CAP, LOW_IOU_CAP, LOW_IOU = 0.10, 0.20, 0.10
EXPECTED_POINTS = 3
MAX_MATCHED_POINTS = 8  # 8! pairings; more is not a segmentation answer


@dataclass(frozen=True)
class Prediction:
    box: Box | None
    positive: list[Point] | None
    negative: list[Point] | None
    time: float | None


def parse(payload: str) -> Prediction:
    """Each field independently; a missing or malformed field is None (its term scores 0)."""
    data: Any = load_json(payload)
    if not isinstance(data, dict):
        return Prediction(None, None, None, None)
    return Prediction(
        box=as_box(data.get("boxes")),
        positive=as_points(data.get("positive_points")),
        negative=as_points(data.get("negative_points")),
        time=finite(data.get("time")),
    )


def point_similarity(
    pred: list[Point], gt: list[Point], scale: tuple[float, float] = (1.0, 1.0)
) -> float:
    """`exp(-d^2 / (2 * 50^2))` with d the smallest mean distance over all pairings of the
    predicted to the ground-truth points (coordinates multiplied by `scale` to pixels)."""
    if len(pred) != len(gt) or len(pred) > MAX_MATCHED_POINTS:
        return 0.0
    if not gt:
        return 1.0
    sx, sy = scale
    best = min(
        sum(
            math.hypot((p[0] - g[0]) * sx, (p[1] - g[1]) * sy)
            for p, g in zip(order, gt, strict=True)
        )
        / len(gt)
        for order in itertools.permutations(pred)
    )
    return math.exp(-best * best / (2 * POINT_SIGMA**2)) if math.isfinite(best) else 0.0


def time_similarity(pred: float, gt: float) -> float:
    """`exp(-|dt| / 2)`."""
    return math.exp(-abs(pred - gt) / 2)


def _pixel_scale(record: TaskRecord) -> tuple[float, float]:
    # Point distances are in pixels (sigma = 50 px); 0..1000 coordinates are converted when
    # the frame size is known.
    if record.box_format == "norm1000" and record.width and record.height:
        return (record.width / 1000, record.height / 1000)
    return (1.0, 1.0)


def _point_terms(
    record: TaskRecord, answer: SegmentationAnswer, pred: Prediction
) -> dict[str, float]:
    scale = _pixel_scale(record)
    return {
        "iou": 0.0 if pred.box is None else box_iou(pred.box, answer.box),
        "pos": 0.0
        if pred.positive is None
        else point_similarity(pred.positive, list(answer.positive_points), scale),
        "neg": 0.0
        if pred.negative is None
        else point_similarity(pred.negative, list(answer.negative_points), scale),
    }


def mask_box(record: TaskRecord, mask: Mask) -> Box:
    """The mask's bounding box in the record's `box_format`."""
    x1, y1, x2, y2 = mask.bbox
    if record.box_format == "norm1000":
        return (
            x1 / mask.width * 1000,
            y1 / mask.height * 1000,
            x2 / mask.width * 1000,
            y2 / mask.height * 1000,
        )
    return mask.bbox


def _to_pixels(record: TaskRecord, mask: Mask, point: Point) -> Point:
    if record.box_format == "norm1000":
        return (point[0] / 1000 * mask.width, point[1] / 1000 * mask.height)
    return point


def _mask_terms(
    record: TaskRecord, answer: SegmentationAnswer, pred: Prediction
) -> tuple[dict[str, float], int]:
    """(terms, number of positive points inside the mask)."""
    mask = load_mask(answer.mask_rle or {})
    positive, negative = pred.positive or [], pred.negative or []
    inside = sum(mask.contains(_to_pixels(record, mask, p), TOLERANCE_PX) for p in positive)
    outside = sum(not mask.contains(_to_pixels(record, mask, p)) for p in negative)
    expected_pos = len(answer.positive_points) or EXPECTED_POINTS
    expected_neg = len(answer.negative_points) or EXPECTED_POINTS
    terms = {
        "iou": 0.0 if pred.box is None else box_iou(pred.box, mask_box(record, mask)),
        "pos": inside / max(len(positive), expected_pos),
        "neg": outside / max(len(negative), expected_neg),
    }
    return terms, inside


def score(record: TaskRecord, payload: str, _config: RewardConfig) -> dict[str, float]:
    """`task` and its terms `iou`, `pos`, `neg` (and `time` for video)."""
    answer = record.answer_as(SegmentationAnswer)
    pred = parse(payload)
    if answer.mask_rle is not None:
        terms, inside = _mask_terms(record, answer, pred)
    else:
        terms, inside = _point_terms(record, answer, pred), None
    video = answer.time is not None
    if answer.time is not None:  # video
        terms["time"] = 0.0 if pred.time is None else time_similarity(pred.time, answer.time)
    weights = VIDEO_WEIGHTS if video else IMAGE_WEIGHTS
    task = sum(weight * terms[name] for name, weight in weights.items()) / 100
    if inside is not None:
        if inside == 0:
            task = min(task, NO_POSITIVE_CAP)
        if terms["iou"] < LOW_IOU:
            task = min(task, LOW_IOU_CAP)
    return {"task": task, **terms}


def serialize(record: TaskRecord) -> str:
    """The ground truth as compact JSON; with a mask, the box is the mask's bounding box (the
    box the mask score compares against)."""
    answer = record.answer_as(SegmentationAnswer)
    box = answer.box if answer.mask_rle is None else mask_box(record, load_mask(answer.mask_rle))
    out: dict[str, Any] = {
        "boxes": list(box),
        "positive_points": [list(p) for p in answer.positive_points],
        "negative_points": [list(p) for p in answer.negative_points],
    }
    if answer.time is not None:
        out["time"] = answer.time
    return compact_json(out)


from videorl.tasks.segmentation import orarl

FAMILY_REWARDS.register("segmentation", FamilyReward(score, serialize, TAGGED, orarl=orarl.adapter))
