"""COCO run-length masks for the segmentation reward (docs/methods.md#segmentation-score), decoded
with pycocotools (compressed string counts or uncompressed count lists)."""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from pycocotools import mask as mask_utils

from videorl.errors import DataError
from videorl.rewards.payload import Box, Point


@dataclass(frozen=True)
class Mask:
    """A decoded binary mask (H x W, read-only) and its bounding box `[x1, y1, x2, y2]` in
    pixels; pixel (row r, column c) covers [c, c + 1) x [r, r + 1)."""

    pixels: np.ndarray
    bbox: Box

    @property
    def height(self) -> int:
        return int(self.pixels.shape[0])

    @property
    def width(self) -> int:
        return int(self.pixels.shape[1])

    def contains(self, point: Point, tolerance: int = 0) -> bool:
        """Whether the pixel under `point` is within `tolerance` pixels (Euclidean, on the
        pixel grid) of a mask pixel."""
        col, row = math.floor(point[0]), math.floor(point[1])
        r0, r1 = max(0, row - tolerance), min(self.height, row + tolerance + 1)
        c0, c1 = max(0, col - tolerance), min(self.width, col + tolerance + 1)
        if r0 >= r1 or c0 >= c1:
            return False
        rows, cols = np.nonzero(self.pixels[r0:r1, c0:c1])
        distance2 = (rows + r0 - row) ** 2 + (cols + c0 - col) ** 2
        return bool(np.any(distance2 <= tolerance * tolerance))


def load_mask(rle: dict[str, Any]) -> Mask:
    """Decode a COCO RLE `{"size": [h, w], "counts": str | list[int]}`."""
    size = rle.get("size") if isinstance(rle, dict) else None
    if not (
        isinstance(size, (list, tuple))
        and len(size) == 2
        and all(isinstance(v, int) and v > 0 for v in size)
    ):
        raise DataError(
            f"mask_rle: expected 'size': [height, width] of positive integers, got {size!r}"
        )
    counts = rle.get("counts")
    if isinstance(counts, list):
        counts = tuple(counts)  # hashable for the cache
    elif not isinstance(counts, str):
        raise DataError(
            f"mask_rle: expected 'counts' as a string or a list of run lengths, got {type(counts).__name__}"
        )
    return _decode(int(size[0]), int(size[1]), counts)


# Every rollout of a group scores against the same mask: decode it once per process.
@functools.lru_cache(maxsize=64)
def _decode(height: int, width: int, counts: str | tuple[int, ...]) -> Mask:
    if isinstance(counts, tuple):
        rle = mask_utils.frPyObjects(
            {"size": [height, width], "counts": list(counts)}, height, width
        )
    else:
        rle = {"size": [height, width], "counts": counts.encode()}
    with warnings.catch_warnings():
        # pycocotools' internal array wrapper predates numpy 2's `copy` keyword; harmless.
        warnings.simplefilter("ignore", DeprecationWarning)
        pixels = mask_utils.decode(rle).astype(bool)
    pixels.setflags(write=False)
    x, y, w, h = (float(v) for v in mask_utils.toBbox(rle))
    return Mask(pixels, (x, y, x + w, y + h))
