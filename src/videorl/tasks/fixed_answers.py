"""What the blind bests of the grounding families share (`tasks/<family>/evaluation.py`): the
best fixed span of the stated duration and the best fixed box of the stated frame, each as
fractions on a grid, fitted by IoU summed over the training records.

A span is `[a D, b D]` with `a < b` on the grid `k / SPAN_STEPS` of the duration `D` the
prompt states. A box is `[x1 W, y1 H, x2 W, y2 H]` with corners on the grid `k / BOX_STEPS`
of the frame `W x H` the prompt states its coordinates in (the record's pixels, or
1000 x 1000 for `norm1000`). IoU does not change when both axes are rescaled, so boxes are
compared in fractions of the frame.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from videorl.data.records import Box, TaskRecord

SPAN_STEPS = 40  # span ends at 0, 0.025, ..., 1 of the duration
BOX_STEPS = 16  # box corners at 0, 1/16, ..., 1 of the frame's width and height
CHUNK = 4096  # candidate boxes scored at once (a CHUNK x N matrix)

Span = tuple[float, float]


def best_span(records: Sequence[TaskRecord], iou: Callable[[TaskRecord, Span], float]) -> Span:
    """The fractions `(a, b)` whose span `[a D, b D]` has the highest summed `iou(record,
    span)` over `records` (all stating D)."""
    grid = [k / SPAN_STEPS for k in range(SPAN_STEPS + 1)]
    candidates = [(a, b) for a in grid for b in grid if b > a]

    def total(span: Span) -> float:
        return sum(iou(r, span) for r in records)

    return max(candidates, key=total)


def span_of(record: TaskRecord, fractions: Span) -> Span:
    """The span `[a D, b D]` of the record's stated duration D."""
    duration = record.duration or 0.0
    return fractions[0] * duration, fractions[1] * duration


def _stated_frame(record: TaskRecord) -> tuple[float, float] | None:
    if record.box_format == "norm1000":
        return 1000.0, 1000.0
    if record.width and record.height:
        return float(record.width), float(record.height)
    return None


def framed(records: Sequence[TaskRecord]) -> list[TaskRecord]:
    """The records whose prompt states the frame (a fixed box is a fraction of it)."""
    return [r for r in records if _stated_frame(r) is not None]


def frame_of(record: TaskRecord) -> tuple[float, float]:
    """The (width, height) the prompt states box coordinates in (`framed` keeps the records
    that state one)."""
    frame = _stated_frame(record)
    if frame is None:
        raise ValueError(f"record {record.id}: its prompt states no frame size")
    return frame


def to_fractions(box: Box, frame: tuple[float, float]) -> np.ndarray:
    width, height = frame
    return np.array(box, dtype=float) / np.array([width, height, width, height])


def to_frame(fractions: np.ndarray, frame: tuple[float, float]) -> list[float]:
    """A box of fractions in the frame's coordinates (rounded to 0.1)."""
    width, height = frame
    return [round(float(v), 1) for v in fractions * np.array([width, height, width, height])]


def describe_box(fractions: np.ndarray) -> str:
    """`[0.25 W, 0.5 H, 0.75 W, 1 H]`: a fixed box as fractions of the frame."""
    x1, y1, x2, y2 = (f"{v:g}" for v in fractions)
    return f"[{x1} W, {y1} H, {x2} W, {y2} H]"


def candidate_boxes(steps: int = BOX_STEPS) -> np.ndarray:
    """Every box (K x 4, fractions) with `x1 < x2`, `y1 < y2` on the grid `k / steps`."""
    low, high = np.triu_indices(steps + 1, 1)
    sides = np.stack([low, high], axis=1) / steps  # (P, 2): [start, end] along one axis
    xs, ys = np.repeat(sides, len(sides), axis=0), np.tile(sides, (len(sides), 1))
    return np.stack([xs[:, 0], ys[:, 0], xs[:, 1], ys[:, 1]], axis=1)


def _area(box: np.ndarray) -> np.ndarray:
    return (box[..., 2] - box[..., 0]) * (box[..., 3] - box[..., 1])


def box_ious(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of the boxes `a` and `b` (`[..., 4]`, broadcast against each other, same
    coordinates): `|A & B| / (|A| + |B| - |A & B|)`, 0 where the union is empty."""
    width = np.clip(np.minimum(a[..., 2], b[..., 2]) - np.maximum(a[..., 0], b[..., 0]), 0, None)
    height = np.clip(np.minimum(a[..., 3], b[..., 3]) - np.maximum(a[..., 1], b[..., 1]), 0, None)
    inter = width * height
    union = _area(a) + _area(b) - inter
    return np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)


def iou_matrix(candidates: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """IoU (K x N) of each candidate box with each target box."""
    return box_ious(candidates[:, None, :], targets[None, :, :])


def best_box(targets: np.ndarray, candidates: np.ndarray | None = None) -> np.ndarray:
    """The candidate (default: `candidate_boxes()`) with the highest summed IoU over the
    target boxes (N x 4, fractions)."""
    candidates = candidate_boxes() if candidates is None else candidates
    totals = np.concatenate(
        [
            iou_matrix(candidates[k : k + CHUNK], targets).sum(axis=1)
            for k in range(0, len(candidates), CHUNK)
        ]
    )
    return candidates[int(np.argmax(totals))]
