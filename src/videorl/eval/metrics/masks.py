"""Segmentation metrics from a predicted box (docs/methods.md#evaluation-metrics).

The model answers a box (and points, docs/methods.md#segmentation-score); for evaluation the box is
the prediction: it is rasterized on the ground-truth mask's pixel grid (pixel (r, c) belongs to
it iff its centre (c + 0.5, r + 0.5) lies inside the box) and compared with the COCO RLE
mask. A record without a mask uses its ground-truth box rasterized the same way (on the
record's `width x height` frame, or 1000 x 1000 for `norm1000` boxes without a size).

- `J` (region similarity, Jaccard): `|P & G| / |P | G|`, 1 when both are empty (DAVIS).
- `F` (boundary F-measure, DAVIS `db_eval_boundary`): boundary maps of P and G
  (`seg2bmap`); a boundary pixel matches if a boundary pixel of the other map lies within
  a disk of radius `ceil(0.008 * image diagonal)` pixels; precision = matched predicted /
  predicted boundary pixels, recall = matched ground-truth / ground-truth boundary pixels,
  `F = 2PR / (P + R)` (0 when P + R = 0; an empty map has precision or recall 1 as in DAVIS).
- Video: the mask is the annotated frame's (the predicted `time` is kept in the report but
  does not enter J or F); `J`, `F` are means over samples and `J&F = (J + F) / 2`.
- Images: `gIoU = mean over samples of J`, `cIoU = sum |P & G| / sum |P | G|`.
All reported in percent. An unparsed answer is an empty predicted mask.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from videorl.data.records import SegmentationAnswer
from videorl.rewards.masks import load_mask
from videorl.rewards.payload import Box

BOUNDARY_TOLERANCE = 0.008  # fraction of the image diagonal (DAVIS `bound_th`)
NORM1000 = 1000.0


def rasterize_box(box: Box | None, height: int, width: int) -> np.ndarray:
    """Boolean H x W mask of the pixels whose centres lie inside `box` (empty for None)."""
    mask = np.zeros((height, width), dtype=bool)
    if box is None:
        return mask
    x1, y1, x2, y2 = box
    cols = np.arange(width) + 0.5
    rows = np.arange(height) + 0.5
    inside_x = (cols >= x1) & (cols <= x2)
    inside_y = (rows >= y1) & (rows <= y2)
    return inside_y[:, None] & inside_x[None, :]


def jaccard(pred: np.ndarray, gt: np.ndarray) -> float:
    """`|P & G| / |P | G|`; 1 when both masks are empty."""
    union = int(np.count_nonzero(pred | gt))
    return 1.0 if union == 0 else int(np.count_nonzero(pred & gt)) / union


def boundary_map(mask: np.ndarray) -> np.ndarray:
    """DAVIS `seg2bmap` at the mask's own size: pixels whose east, south or south-east
    neighbour differs (the last row and column compare along the edge only)."""
    seg = mask.astype(bool)
    east, south, south_east = np.zeros_like(seg), np.zeros_like(seg), np.zeros_like(seg)
    east[:, :-1] = seg[:, 1:]
    south[:-1, :] = seg[1:, :]
    south_east[:-1, :-1] = seg[1:, 1:]
    bmap = (seg ^ east) | (seg ^ south) | (seg ^ south_east)
    bmap[-1, :] = seg[-1, :] ^ east[-1, :]
    bmap[:, -1] = seg[:, -1] ^ south[:, -1]
    bmap[-1, -1] = False
    return bmap


def dilate_disk(mask: np.ndarray, radius: int) -> np.ndarray:
    """Binary dilation by the disk `{(dx, dy): dx^2 + dy^2 <= radius^2}` (skimage `disk`):
    for each row offset dy, a horizontal dilation of half-width `isqrt(r^2 - dy^2)` computed
    with a running sum, shifted by dy."""
    if radius <= 0:
        return mask.copy()
    height, width = mask.shape
    counts = np.concatenate([np.zeros((height, 1), np.int64), np.cumsum(mask, axis=1)], axis=1)
    cols = np.arange(width)
    out = np.zeros_like(mask, dtype=bool)
    for dy in range(-radius, radius + 1):
        half = math.isqrt(radius * radius - dy * dy)
        low, high = np.clip(cols - half, 0, width), np.clip(cols + half + 1, 0, width)
        near = (counts[:, high] - counts[:, low]) > 0
        if dy >= 0:
            out[: height - dy] |= near[dy:]
        else:
            out[-dy:] |= near[: height + dy]
    return out


def boundary_radius(height: int, width: int, tolerance: float = BOUNDARY_TOLERANCE) -> int:
    """`ceil(tolerance * diagonal)` pixels (a tolerance >= 1 is already in pixels)."""
    return int(tolerance) if tolerance >= 1 else math.ceil(tolerance * math.hypot(height, width))


def boundary_f(pred: np.ndarray, gt: np.ndarray, tolerance: float = BOUNDARY_TOLERANCE) -> float:
    """The DAVIS boundary F-measure of two masks of the same size."""
    height, width = gt.shape
    radius = boundary_radius(height, width, tolerance)
    pred_b, gt_b = boundary_map(pred), boundary_map(gt)
    n_pred, n_gt = int(pred_b.sum()), int(gt_b.sum())
    if n_pred == 0 and n_gt == 0:
        return 1.0
    if n_pred == 0 or n_gt == 0:
        return 0.0  # precision or recall is 0 (DAVIS sets the other to 1)
    precision = int((pred_b & dilate_disk(gt_b, radius)).sum()) / n_pred
    recall = int((gt_b & dilate_disk(pred_b, radius)).sum()) / n_gt
    return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)


def to_pixels(
    box: Box, box_format: str, frame: tuple[int | None, int | None], grid: tuple[int, int]
) -> Box:
    """A box in the record's format -> pixels of the `grid` (H, W): 0..1000 coordinates
    are scaled to the grid; absolute pixels of a `frame` (W, H) of another size are
    rescaled."""
    height, width = grid
    frame_w, frame_h = frame
    if box_format == "norm1000":
        sx, sy = width / NORM1000, height / NORM1000
    elif frame_w and frame_h:
        sx, sy = width / frame_w, height / frame_h
    else:
        sx = sy = 1.0
    x1, y1, x2, y2 = box
    return (x1 * sx, y1 * sy, x2 * sx, y2 * sy)


def ground_truth_mask(
    answer: SegmentationAnswer, box_format: str, frame: tuple[int | None, int | None]
) -> np.ndarray:
    """The RLE mask, else the ground-truth box rasterized on the frame (or a 1000 x 1000
    grid for `norm1000`, or a grid just holding the box)."""
    if answer.mask_rle is not None:
        return load_mask(answer.mask_rle).pixels
    frame_w, frame_h = frame
    if frame_w and frame_h:
        grid = (int(frame_h), int(frame_w))
    elif box_format == "norm1000":
        grid = (int(NORM1000), int(NORM1000))
    else:
        grid = (math.ceil(answer.box[3]) + 1, math.ceil(answer.box[2]) + 1)
    return rasterize_box(to_pixels(answer.box, box_format, frame, grid), *grid)


def segmentation_scores(
    pred: Box | None,
    answer: SegmentationAnswer,
    box_format: str = "abs",
    frame: tuple[int | None, int | None] = (None, None),
) -> dict[str, float]:
    """`j`, `f` (fractions) and the pixel counts `inter`, `union` of one sample."""
    gt = ground_truth_mask(answer, box_format, frame)
    grid = gt.shape
    box = None if pred is None else to_pixels(pred, box_format, frame, grid)
    mask = rasterize_box(box, *grid)
    return {
        "j": jaccard(mask, gt),
        "f": boundary_f(mask, gt),
        "inter": float(np.count_nonzero(mask & gt)),
        "union": float(np.count_nonzero(mask | gt)),
    }


def summarize_video(j: Sequence[float], f: Sequence[float]) -> dict[str, float]:
    """`J`, `F` and `J&F = (J + F) / 2`, in percent."""
    mean_j = 100.0 * sum(j) / len(j) if j else 0.0
    mean_f = 100.0 * sum(f) / len(f) if f else 0.0
    return {"J": mean_j, "F": mean_f, "J&F": (mean_j + mean_f) / 2}


def summarize_image(
    j: Sequence[float], inter: Sequence[float], union: Sequence[float]
) -> dict[str, float]:
    """`gIoU` (mean per-sample IoU) and `cIoU` (sum of intersections / sum of unions), in
    percent."""
    total = sum(union)
    return {
        "gIoU": 100.0 * sum(j) / len(j) if j else 0.0,
        "cIoU": 100.0 * sum(inter) / total if total else 0.0,
    }
