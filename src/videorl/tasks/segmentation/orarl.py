"""OraRL's segmentation reward, exactly as its adapter scores it.

Against ours (`rewards/orarl_parsing.py` says what every adapter shares; docs/fidelity.md):

- segmentation: format 0 unless the payload is a JSON object with a box, exactly three
  positive and three negative points (and a time, for video); with a mask, box and points
  are 0..1000 coordinates mapped onto the mask (`round`, a 7 x 7 square tolerance for
  positive and negative points alike), a video gets the constant 0.10 time weight and the
  mask of the frame nearest the *predicted* time (`SegmentationAnswer.frame_masks`);
  without a mask, points are compared in raw units (sigma 50 of 0..1000 coordinates);
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from videorl.data.records import SegmentationAnswer, TaskRecord
from videorl.errors import DataError
from videorl.rewards.orarl_parsing import (
    box,
    box_iou,
    canonical_payload,
    finite,
    finite_all,
    is_sequence,
    mapping_or_literal,
    strict_object,
)
from videorl.rewards.registry import Components

POINT_SIGMA, TIME_TAU = 50.0, 2.0
IMAGE_WEIGHTS = (0.50, 0.25, 0.25)  # box, positive, negative
VIDEO_WEIGHTS = (0.35, 0.10, 0.40, 0.15)  # box, time, positive, negative
NO_POSITIVE_CAP, BOX_MISS_CAP, BOX_MISS_IOU = 0.10, 0.20, 0.10
POINT_RADIUS = 3


def three_points(value: Any) -> list[list[float]] | None:
    """Exactly three `[x, y, ...]` points of numbers, else None."""
    if not (is_sequence(value) and len(value) == 3):
        return None
    points = []
    for point in value:
        if not (is_sequence(point) and len(point) >= 2):
            return None
        x, y = finite(point[0]), finite(point[1])
        if x is None or y is None:
            return None
        points.append([x, y])
    return points


def point_similarity(predicted: list | None, target: list | None) -> float:
    """exp(-d^2 / (2 sigma^2)), d the mean distance under the best of the six pairings, in
    the points' own units (sigma 50)."""
    if predicted is None or target is None:
        return 0.0
    best = math.inf
    for order in itertools.permutations(range(3)):
        total = sum(
            math.hypot(predicted[order[i]][0] - target[i][0], predicted[order[i]][1] - target[i][1])
            for i in range(3)
        )
        best = min(best, total)
    mean = best / 3.0
    return math.exp(-(mean**2) / (2.0 * POINT_SIGMA**2))


def _first_number(source: Mapping[str, Any], names: Sequence[str]) -> float | None:
    for name in names:
        if (number := finite(source.get(name))) is not None:
            return number
    return None


def frame_at(record: TaskRecord, keys: list[str], seconds: float) -> int:
    """The index of the mask frame OraRL scores for a predicted time (`_video_mask`): the
    key nearest `seconds * fps` (fps: `extra.fps` / `extra.video_fps`), or index
    `round(seconds * fps)` for keys that are not numbers; without fps, index
    `round(seconds / duration * (n - 1))`, else the key nearest `seconds`, else 0."""
    numbers = finite_all(keys)
    fps = _first_number(record.extra, ("fps", "video_fps"))
    if fps is not None and fps > 0.0:
        target = seconds * fps
        if numbers is None:
            index = round(target)
        else:
            index = min(range(len(keys)), key=lambda i: abs(numbers[i] - target))
    elif record.duration is not None and record.duration > 0.0:
        index = round(seconds / record.duration * max(len(keys) - 1, 0))
    elif numbers is not None:
        index = min(range(len(keys)), key=lambda i: abs(numbers[i] - seconds))
    else:
        index = 0
    return max(0, min(index, len(keys) - 1))


def _decoded(rle: Any) -> np.ndarray | None:
    from videorl.rewards.masks import load_mask

    try:
        return load_mask(rle).pixels
    except (DataError, ValueError, TypeError):
        return None


def _mask_of(
    record: TaskRecord, answer: SegmentationAnswer, video: bool, time: float | None
) -> tuple[bool, np.ndarray | None]:
    """(True, pixels or None) for the mask OraRL scores against, (False, None) without one:
    a video's frame at the predicted time (a single `mask_rle` is its only frame), an image's
    mask."""
    if video:
        frames = dict(answer.frame_masks or {})
        if not frames and answer.mask_rle is not None:
            frames = {"0": answer.mask_rle}
        if time is None or not frames:
            return False, None
        keys = list(frames)
        return True, _decoded(frames[keys[frame_at(record, keys, time)]])
    if answer.mask_rle is None:
        return False, None
    return True, _decoded(answer.mask_rle)


class _Frame:
    """Maps 0..1000 (or, for `abs` records, pixel) coordinates onto a mask's pixels as
    OraRL does: through the coordinate frame `width x height` (the record's, else the
    mask's)."""

    def __init__(self, record: TaskRecord, pixels: np.ndarray) -> None:
        self.pixels = pixels
        self.rows, self.cols = pixels.shape
        if record.width and record.height and record.width > 0 and record.height > 0:
            self.width, self.height = int(record.width), int(record.height)
        else:
            self.width, self.height = self.cols, self.rows
        self.thousandths = record.box_format == "norm1000"

    def x(self, value: float) -> float:
        return value * self.width / 1000.0 if self.thousandths else value

    def y(self, value: float) -> float:
        return value * self.height / 1000.0 if self.thousandths else value

    def mask_box(self) -> list[float]:
        ys, xs = np.nonzero(self.pixels)
        return [
            float(xs.min()) * self.width / self.cols,
            float(ys.min()) * self.height / self.rows,
            float(xs.max() + 1) * self.width / self.cols,
            float(ys.max() + 1) * self.height / self.rows,
        ]

    def hit(self, point: list[float]) -> bool:
        """Whether a mask pixel lies within the 7 x 7 square around the point's pixel."""
        col = round(self.x(point[0]) * self.cols / self.width)
        row = round(self.y(point[1]) * self.rows / self.height)
        if not (0 <= col < self.cols and 0 <= row < self.rows):
            return False
        r = POINT_RADIUS
        window = self.pixels[max(0, row - r) : row + r + 1, max(0, col - r) : col + r + 1]
        return bool(self.pixels[row, col] or np.any(window))

    def share(self, points: list[list[float]] | None, inside: bool) -> float:
        if points is None:
            return 0.0
        return sum(self.hit(point) == inside for point in points) / len(points)


def _mask_terms(
    record: TaskRecord, pixels: np.ndarray, predicted: Mapping[str, Any], video: bool
) -> Components:
    if not np.any(pixels):
        return {"task": 0.0, "iou": 0.0, "pos": 0.0, "neg": 0.0}
    frame = _Frame(record, pixels)
    pred_box = box(predicted.get("boxes"), reorder=True)
    scaled = None
    if pred_box is not None:
        scaled = [frame.x(pred_box[0]), frame.y(pred_box[1])]
        scaled += [frame.x(pred_box[2]), frame.y(pred_box[3])]
    iou = box_iou(scaled, frame.mask_box())
    pos = frame.share(three_points(predicted.get("positive_points")), inside=True)
    neg = frame.share(three_points(predicted.get("negative_points")), inside=False)
    if video:
        w_box, w_time, w_pos, w_neg = VIDEO_WEIGHTS
        task = w_box * iou + w_time + w_pos * pos + w_neg * neg
    else:
        w_box, w_pos, w_neg = IMAGE_WEIGHTS
        task = w_box * iou + w_pos * pos + w_neg * neg
    if pos <= 0.0:
        task = min(task, NO_POSITIVE_CAP)
    if iou < BOX_MISS_IOU:
        task = min(task, BOX_MISS_CAP)
    return {"task": max(0.0, min(1.0, task)), "iou": iou, "pos": pos, "neg": neg}


def adapter(record: TaskRecord, response: str) -> tuple[float, Components]:
    answer = record.answer_as(SegmentationAnswer)
    payload = canonical_payload(response)
    predicted = mapping_or_literal(payload)
    strict = strict_object(payload)
    fields = predicted or {}
    pred_box = box(fields.get("boxes"), reorder=True)
    positive = three_points(fields.get("positive_points"))
    negative = three_points(fields.get("negative_points"))
    time = finite(fields.get("time"))
    kind = str(record.extra.get("data_type") or "").strip().lower()
    video = kind == "video" if kind in ("image", "video") else answer.time is not None
    structured = predicted is not None and isinstance(strict, Mapping)
    complete = None not in (pred_box, positive, negative) and (not video or time is not None)
    fmt = float(payload is not None and structured and complete)

    time_sim = 0.0
    if time is not None and answer.time is not None:
        time_sim = math.exp(-abs(time - answer.time) / TIME_TAU)
    has_mask, pixels = (False, None) if predicted is None else _mask_of(record, answer, video, time)
    if has_mask and predicted is not None:  # has_mask implies predicted
        terms = (
            {"task": 0.0, "iou": 0.0, "pos": 0.0, "neg": 0.0}
            if pixels is None
            else _mask_terms(record, pixels, predicted, video)
        )
    else:
        iou = box_iou(pred_box, box(list(answer.box), reorder=True))
        pos = point_similarity(positive, three_points(answer.positive_points))
        neg = point_similarity(negative, three_points(answer.negative_points))
        if video:
            w_box, w_time, w_pos, w_neg = VIDEO_WEIGHTS
            task = w_box * iou + w_time * time_sim + w_pos * pos + w_neg * neg
        else:
            w_box, w_pos, w_neg = IMAGE_WEIGHTS
            task = w_box * iou + w_pos * pos + w_neg * neg
        terms = {"task": task, "iou": iou, "pos": pos, "neg": neg}
    if video and time is None:
        terms["task"] = 0.0
    terms["task"] = max(0.0, min(1.0, terms["task"]))
    return fmt, {**terms, "time": time_sim} if video else terms
