"""OraRL's per-task rewards, exactly as its adapters score them (`reward.mode: orarl`).

Re-implemented from `orarl/rewards/adapters/*.py` in HVision-NKU/OraRL (commit e3903be)
for the OraRL recipes; everywhere else videorl's scorers apply (`reward.mode: videorl`, the
default). `score(record, response)` returns (format, components) with `task` = OraRL's
`accuracy`, and the router sets `overall = task * format` as OraRL does. What each family
changes against ours (docs/fidelity.md lists each with its published file and line):

- every family reads the answer as `orarl_parsing.canonical_payload` does (several
  `</think>` tags allowed, tags in any case, the payload stripped);
- temporal grounding: `S to E` / `S and E` with whitespace around the word, no `s`
  suffix, no exponent; S > E is format 0; the span is compared unsorted-safe (tIoU of the
  sorted pair);
- spatial grounding: a tagged payload passes the format check when any box can be read
  from it (JSON, `(x1, y1), (x2, y2)`, or the last four numbers); the Qwen-native fenced
  JSON also when it is the last answer block;
- segmentation: format 0 unless the payload is a JSON object with a box, exactly three
  positive and three negative points (and a time, for video); with a mask, box and points
  are 0..1000 coordinates mapped onto the mask (`round`, a 7 x 7 square tolerance for
  positive and negative points alike), a video gets the constant 0.10 time weight and the
  mask of the frame nearest the *predicted* time (`SegmentationAnswer.frame_masks`);
  without a mask, points are compared in raw units (sigma 50 of 0..1000 coordinates);
- tracking / spatio-temporal grounding: format 0 unless the payload is a JSON object
  whose boxes all have integer frame (second) keys and readable boxes (and, for STG, a
  time pair with start <= end); keys match exactly; STG is always `0.2 tIoU + 0.8 sIoU`;
- spatial intelligence: numbers must be bare (`12`, `-0.5`; format 0 otherwise), MRA is
  compared in floats over thresholds `0.50 + 0.05 k` (target 10, prediction 9: 0.8);
  choices are `A`-`D` only, a bare letter in any case;
- video QA: a bare letter A-H in any case (`(B)`, `B.` and `B. text` are format 0).

Math has no OraRL adapter and keeps videorl's scorer. Ground-truth windows stay clipped
to the video's duration (as the annotation row serializes them).
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from videorl.data.records import (
    BoxAnswer,
    ChoiceAnswer,
    NumericAnswer,
    SegmentationAnswer,
    SpatioTemporalAnswer,
    TaskRecord,
    TextAnswer,
    TrackingAnswer,
)
from videorl.errors import DataError
from videorl.rewards.orarl_parsing import (
    NUMBER,
    box,
    box_iou,
    canonical_payload,
    finite,
    finite_all,
    frame_boxes,
    interval_iou,
    is_sequence,
    json_value,
    last_answer_block,
    mapping_or_literal,
    unfence,
    without_reasoning,
)
from videorl.rewards.video_qa import text_match

Components = dict[str, float]

# ----- temporal grounding (adapters/temporal_grounding.py) ---------------------------------

_SPAN = re.compile(rf"\s*({NUMBER})\s+(?:to|and)\s+({NUMBER})\s*", re.IGNORECASE)


def temporal_grounding(record: TaskRecord, response: str) -> tuple[float, Components]:
    from videorl.rewards.temporal_grounding import ground_truth

    payload = canonical_payload(response)
    found = None if payload is None else _SPAN.fullmatch(payload)
    span = None if found is None else (float(found.group(1)), float(found.group(2)))
    if span is not None and span[0] > span[1]:
        span = None
    iou = 0.0 if span is None else max(interval_iou(span, w) for w in ground_truth(record))
    return (0.0 if span is None else 1.0), {"task": iou, "iou": iou}


# ----- spatial grounding (adapters/spatial_grounding.py) -----------------------------------

_NATIVE = re.compile(r"\s*```json\s*(.*?)\s*```\s*", re.DOTALL | re.IGNORECASE)
_CORNERS = re.compile(
    rf"\(\s*({NUMBER})\s*,\s*({NUMBER})\s*\)\s*,?\s*\(\s*({NUMBER})\s*,\s*({NUMBER})\s*\)"
)


def lenient_box(value: Any) -> list[float] | None:
    """A box from JSON, else from `(x1, y1), (x2, y2)`, else from the last four numbers."""
    found = box(json_value(value))
    if found is not None:
        return found
    text = last_answer_block(value)
    corners = _CORNERS.search(text)
    if corners is not None:
        return [float(number) for number in corners.groups()]
    numbers = re.findall(NUMBER, text)
    return [float(number) for number in numbers[-4:]] if len(numbers) >= 4 else None


def _native_box(text: str) -> list[float] | None:
    fenced = _NATIVE.fullmatch(text)
    if fenced is None:
        return None
    try:
        data = json.loads(fenced.group(1))
    except ValueError:
        return None
    if isinstance(data, list) and len(data) == 1 and isinstance(data[0], Mapping):
        return box(data[0]["bbox_2d"]) if "bbox_2d" in data[0] else None
    return None


def spatial_grounding(record: TaskRecord, response: str) -> tuple[float, Components]:
    answer = record.answer
    assert isinstance(answer, BoxAnswer), f"record {record.id}: not a box answer"
    final = without_reasoning(response)
    predicted, fmt = _native_box(final), 1.0
    if predicted is None:
        tagged = canonical_payload(response)
        predicted = None if tagged is None else lenient_box(tagged)
    if predicted is None:
        predicted, fmt = lenient_box(unfence(final)), 0.0
    iou = box_iou(predicted, list(answer.box))
    return fmt, {"task": iou, "iou": iou}


# ----- tracking and spatio-temporal grounding (adapters/tracking.py, ..._grounding.py) -----


def _strict_object(payload: str | None) -> Any:
    """The payload parsed as strict JSON (no fence, no surrounding text), else None."""
    if payload is None:
        return None
    try:
        return json.loads(payload)
    except ValueError:
        return None


def _boxes_of(data: Any) -> tuple[dict[str, list[float]], bool]:
    """(frame boxes, every key kept) of `data["boxes"]` when it is a mapping."""
    raw = data.get("boxes") if isinstance(data, Mapping) else None
    if not isinstance(raw, Mapping):
        return {}, False
    boxes = frame_boxes(raw)
    return boxes, bool(boxes) and len(boxes) == len(raw)


def _mean_iou(predicted: dict[str, list[float]], target: dict[str, list[float]]) -> float:
    if not target:
        return 0.0
    return sum(box_iou(predicted.get(frame), gt) for frame, gt in target.items()) / len(target)


def _coverage(predicted: dict[str, list[float]], target: dict[str, list[float]]) -> float:
    return sum(frame in predicted for frame in target) / len(target) if target else 0.0


def tracking(record: TaskRecord, response: str) -> tuple[float, Components]:
    answer = record.answer
    assert isinstance(answer, TrackingAnswer), f"record {record.id}: not a tracking answer"
    predicted, complete = _boxes_of(_strict_object(canonical_payload(response)))
    target = frame_boxes(answer.boxes)
    iou = _mean_iou(predicted, target)
    return float(complete), {"task": iou, "iou": iou, "coverage": _coverage(predicted, target)}


TIME_WEIGHT = 0.2


def _time_pair(value: Any) -> list[float] | None:
    if not (is_sequence(value) and len(value) == 2):
        return None
    return finite_all(value)


def spatio_temporal_grounding(record: TaskRecord, response: str) -> tuple[float, Components]:
    from videorl.rewards.geometry import clip_window

    answer = record.answer
    assert isinstance(answer, SpatioTemporalAnswer), f"record {record.id}: not an STG answer"
    data = _strict_object(canonical_payload(response))
    if not isinstance(data, Mapping):
        data = None
    span = None if data is None else _time_pair(data.get("time"))
    predicted, complete = _boxes_of(data)
    fmt = float(span is not None and span[0] <= span[1] and complete)
    target = frame_boxes(answer.boxes)
    tiou = interval_iou(span, list(clip_window(answer.time, record.duration)))
    siou = _mean_iou(predicted, target)
    task = TIME_WEIGHT * tiou + (1.0 - TIME_WEIGHT) * siou
    components = {"task": task, "tiou": tiou, "siou": siou}
    return fmt, {**components, "coverage": _coverage(predicted, target)}


# ----- spatial intelligence, video QA (adapters/spatial_intelligence.py, video_qa.py) ------

_BARE_NUMBER = re.compile(rf"\s*{NUMBER}\s*")
_FIRST_NUMBER = re.compile(NUMBER)
MRA_THRESHOLDS = tuple(0.50 + 0.05 * k for k in range(10))  # computed in floats, as OraRL does


def float_mra(prediction: float, target: float) -> float:
    """OraRL's MRA: thresholds and the relative error in floats (target 10, prediction 9:
    `0.1 <= 1.0 - 0.9 = 0.09999999999999998` fails, so 0.8; videorl's exact decimals give
    0.9, `geometry.mean_relative_accuracy`)."""
    if target == 0.0:
        return 0.0
    error = abs(prediction - target) / abs(target)
    return sum(error <= 1.0 - theta for theta in MRA_THRESHOLDS) / len(MRA_THRESHOLDS)


def _letter(text: str, letters: str) -> str:
    found = re.fullmatch(rf"\s*([{letters}])\s*", text, re.IGNORECASE)
    return "" if found is None else found.group(1).upper()


def _choice(predicted: str, target: str) -> tuple[float, Components]:
    correct = float(bool(predicted) and bool(target) and predicted == target)
    return float(bool(predicted)), {"task": correct}


def spatial_intelligence(record: TaskRecord, response: str) -> tuple[float, Components]:
    payload = canonical_payload(response)
    answer = record.answer
    if isinstance(answer, ChoiceAnswer):
        target = answer.letter if answer.letter in "ABCD" else ""
        return _choice(_letter(last_answer_block(payload), "A-D"), target)
    assert isinstance(answer, NumericAnswer), f"record {record.id}: not a numeric or choice answer"
    fmt = float(payload is not None and _BARE_NUMBER.fullmatch(payload) is not None)
    first = _FIRST_NUMBER.search(last_answer_block(payload))
    value = None if first is None else finite(first.group(0))
    mra = 0.0 if value is None else float_mra(value, answer.value)
    return fmt, {"task": mra, "mra": mra}


def video_qa(record: TaskRecord, response: str) -> tuple[float, Components]:
    answer = record.answer
    if isinstance(answer, TextAnswer):  # open-ended (no OraRL adapter): normalised match
        payload = canonical_payload(response) or ""
        return float(bool(payload.strip())), {"task": text_match(payload, answer.text)}
    assert isinstance(answer, ChoiceAnswer), f"record {record.id}: not a choice answer"
    return _choice(_letter(canonical_payload(response) or "", "A-H"), answer.letter)


# ----- segmentation (adapters/segmentation.py) ---------------------------------------------

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


def _mask_of(record: TaskRecord, answer: SegmentationAnswer, video: bool, time: float | None):
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


def segmentation(record: TaskRecord, response: str) -> tuple[float, Components]:
    answer = record.answer
    assert isinstance(answer, SegmentationAnswer), f"record {record.id}: not a segmentation answer"
    payload = canonical_payload(response)
    predicted = mapping_or_literal(payload)
    strict = _strict_object(payload)
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
