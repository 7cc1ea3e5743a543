"""Plain metrics shared by the rewards and the evaluation harness: temporal IoU (and the
TaRO shaped variant), box IoU and mean relative accuracy (docs/methods.md#temporal-iou,
#mean-relative-accuracy).

Pure functions of numbers; any non-finite input gives 0 rather than NaN.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from decimal import Decimal
from fractions import Fraction

from videorl.data.records import Box

Window = Sequence[float]
BoxLike = Sequence[float]


def _finite(*values: float) -> bool:
    return all(math.isfinite(v) for v in values)


def clip_window(window: Window, duration: float | None) -> tuple[float, float]:
    """The ground-truth window clipped to [0, duration] (to [0, inf) when unknown)."""
    start, end = max(0.0, float(window[0])), float(window[1])
    if duration is not None and duration > 0:
        start, end = min(start, duration), min(end, duration)
    return (start, max(start, end))


def temporal_iou(pred: Window, gt: Window) -> float:
    """`tIoU = max(0, min(pe, ge) - max(ps, gs)) / (max(pe, ge) - min(ps, gs))`, 0 when the
    union is 0 (docs/methods.md#temporal-iou). Example: p = [3, 7], g = [2, 6] -> 3 / 5 = 0.6."""
    ps, pe, gs, ge = float(pred[0]), float(pred[1]), float(gt[0]), float(gt[1])
    if not _finite(ps, pe, gs, ge):
        return 0.0
    inter = max(0.0, min(pe, ge) - max(ps, gs))
    union = max(pe, ge) - min(ps, gs)
    if not union > 0 or not math.isfinite(union):
        return 0.0
    return min(1.0, inter / union)


def temporal_iou_v2(pred: Window, gt: Window, duration: float) -> float:
    """TaRO training shaping `iou_v2 = tIoU * (1 - |gs - ps| / D) * (1 - |ge - pe| / D)`
    (docs/methods.md#temporal-iou); each factor is floored at 0 for predictions beyond the video,
    and a non-positive or non-finite D gives 0.
    Example: g = [2, 6], p = [3, 7], D = 10 -> 0.6 * 0.9 * 0.9 = 0.486."""
    iou = temporal_iou(pred, gt)
    if iou == 0.0 or not (math.isfinite(duration) and duration > 0):
        return 0.0
    start_factor = max(0.0, 1.0 - abs(float(gt[0]) - float(pred[0])) / duration)
    end_factor = max(0.0, 1.0 - abs(float(gt[1]) - float(pred[1])) / duration)
    return iou * start_factor * end_factor


def box_iou(a: BoxLike, b: BoxLike) -> float:
    """Intersection over union of two boxes `[x1, y1, x2, y2]`; 0 when the union is 0."""
    ax1, ay1, ax2, ay2 = (float(v) for v in a)
    bx1, by1, bx2, by2 = (float(v) for v in b)
    if not _finite(ax1, ay1, ax2, ay2, bx1, by1, bx2, by2):
        return 0.0
    inter = max(0.0, min(ax2, bx2) - max(ax1, bx1)) * max(0.0, min(ay2, by2) - max(ay1, by1))
    area_a = max(0.0, ax2 - ax1) * max(0.0, ay2 - ay1)
    area_b = max(0.0, bx2 - bx1) * max(0.0, by2 - by1)
    union = area_a + area_b - inter
    if not (union > 0 and math.isfinite(union) and math.isfinite(inter)):
        return 0.0
    return min(1.0, inter / union)


# Thresholds theta in {0.50, 0.55, ..., 0.95} as integer percents, so that the comparison
# below is exact.
_MRA_THETAS = range(50, 100, 5)


def _exact(value: float) -> Fraction:
    # The decimal the number was written as (its shortest repr), as an exact rational.
    return Fraction(Decimal(repr(float(value))))


def mean_relative_accuracy(pred: float, target: float) -> float:
    """`MRA(p, t) = mean over theta in {0.50, ..., 0.95} of 1[|p - t| / |t| <= 1 - theta]`;
    t = 0 gives 0 (docs/methods.md#mean-relative-accuracy). Example: t = 10, p = 12 -> 0.7.

    Compared in exact decimal arithmetic: in floats `1 - 0.80 = 0.19999999999999996 < 0.2`,
    which would fail the worked example's boundary case.
    """
    if not _finite(float(pred), float(target)) or target == 0:
        return 0.0
    p, t = _exact(pred), _exact(target)
    relative_error = abs(p - t) / abs(t)
    passed = sum(1 for theta in _MRA_THETAS if relative_error * 100 <= 100 - theta)
    return passed / len(_MRA_THETAS)


MATCH_TOLERANCE_S = 0.5


def nearest_box(pred: dict[float, Box], second: float) -> Box | None:
    """The predicted box at the second nearest to `second`, if within 0.5 s."""
    if not pred:
        return None
    key = min(pred, key=lambda t: (abs(t - second), t))
    return pred[key] if abs(key - second) <= MATCH_TOLERANCE_S else None
