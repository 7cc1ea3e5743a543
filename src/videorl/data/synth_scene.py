"""Drawing primitives of the synthetic data: coloured shapes on a plain background.

Every ground truth is computed from the same pixel masks that are drawn, so boxes, masks
and points are exact in the pixel frame of the file (`abs` box format, `x2`/`y2`
exclusive: a square at x=10 of size 8 has box [10, y, 18, y + 8]).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pycocotools.mask as mask_utils

from videorl.data.records import Box, Point

BACKGROUND = (20, 20, 20)
# Saturated, well-separated colours that survive yuv420p compression.
COLORS: dict[str, tuple[int, int, int]] = {
    "red": (230, 40, 40),
    "green": (40, 200, 60),
    "blue": (50, 90, 240),
    "yellow": (240, 220, 40),
    "white": (245, 245, 245),
    "magenta": (220, 60, 220),
    "cyan": (40, 220, 220),
    "orange": (250, 140, 30),
}
SHAPES = ("square", "circle")


@dataclass(frozen=True)
class Placed:
    """A shape of `size` pixels with its top-left corner at (x, y)."""

    shape: str
    color: str
    x: int
    y: int
    size: int

    @property
    def name(self) -> str:
        return f"{self.color} {self.shape}"

    @property
    def center(self) -> tuple[float, float]:
        return (self.x + self.size / 2, self.y + self.size / 2)

    def mask(self, height: int, width: int) -> np.ndarray:
        """Boolean `H x W` mask: pixel (r, c) is inside a circle when its centre
        (c + 0.5, r + 0.5) is within size / 2 of the shape's centre."""
        rows, cols = np.mgrid[0:height, 0:width]
        if self.shape == "square":
            return (
                (cols >= self.x)
                & (cols < self.x + self.size)
                & (rows >= self.y)
                & (rows < self.y + self.size)
            )
        cx, cy = self.center
        return (cols + 0.5 - cx) ** 2 + (rows + 0.5 - cy) ** 2 <= (self.size / 2) ** 2

    def moved(self, x: int, y: int) -> Placed:
        return Placed(self.shape, self.color, x, y, self.size)

    def recoloured(self, color: str) -> Placed:
        return Placed(self.shape, color, self.x, self.y, self.size)


def mask_box(mask: np.ndarray) -> Box:
    """Tight box [x1, y1, x2, y2] of a non-empty mask, x2/y2 exclusive."""
    rows, cols = np.nonzero(mask)
    return (float(cols.min()), float(rows.min()), float(cols.max() + 1), float(rows.max() + 1))


def mask_rle(mask: np.ndarray) -> dict[str, object]:
    """COCO run-length encoding `{"size": [h, w], "counts": str}` of a boolean mask."""
    rle = mask_utils.encode(np.asfortranarray(mask.astype(np.uint8)))
    return {"size": [int(s) for s in rle["size"]], "counts": rle["counts"].decode("ascii")}


def render_frame(height: int, width: int, items: list[Placed]) -> np.ndarray:
    """uint8 `H x W x 3` frame; later items are drawn over earlier ones."""
    frame = np.empty((height, width, 3), dtype=np.uint8)
    frame[:] = BACKGROUND
    for item in items:
        frame[item.mask(height, width)] = COLORS[item.color]
    return frame


def render_video(
    height: int, width: int, fps: int, duration: float, at: Callable[[float], list[Placed]]
) -> np.ndarray:
    """`round(duration * fps)` frames; frame k shows `at(k / fps)`."""
    return np.stack(
        [render_frame(height, width, at(k / fps)) for k in range(round(duration * fps))]
    )


def place(
    rng: np.random.Generator,
    size: int,
    height: int,
    width: int,
    avoid: Sequence[Placed] = (),
    gap: int = 4,
    x_range: tuple[int, int] | None = None,
) -> tuple[int, int]:
    """A random top-left corner for a `size` shape inside the frame, at least `gap` pixels
    from every shape in `avoid` (boxes do not touch, so masks and answers stay unique)."""
    lo_x, hi_x = x_range or (0, width - size)
    for _ in range(200):
        x = int(rng.integers(lo_x, hi_x + 1))
        y = int(rng.integers(0, height - size + 1))
        if all(
            x + size + gap <= o.x
            or o.x + o.size + gap <= x
            or y + size + gap <= o.y
            or o.y + o.size + gap <= y
            for o in avoid
        ):
            return x, y
    raise RuntimeError(f"no free place for a {size} px shape in a {width}x{height} frame")


def _grow(mask: np.ndarray, radius: int) -> np.ndarray:
    """Dilation by a (2r+1)^2 square (erosion is `~_grow(~mask, r)`)."""
    grown = mask.copy()
    for dy in range(-radius, radius + 1):
        for dx in range(-radius, radius + 1):
            shifted = np.zeros_like(mask)
            shifted[
                max(dy, 0) : mask.shape[0] + min(dy, 0), max(dx, 0) : mask.shape[1] + min(dx, 0)
            ] = mask[
                max(-dy, 0) : mask.shape[0] - max(dy, 0), max(-dx, 0) : mask.shape[1] - max(dx, 0)
            ]
            grown |= shifted
    return grown


def pick_points(
    rng: np.random.Generator,
    mask: np.ndarray,
    inside: bool,
    k: int = 3,
    margin: int = 6,
    clearance: int = 2,
) -> tuple[Point, ...]:
    """`k` distinct pixel centres inside the mask, or outside it but within `margin`
    pixels of its box (negative points near the object, as referring-segmentation
    annotators place them); `clearance` pixels from the boundary when the shape allows,
    so a point's colour is unambiguous after video compression."""
    if inside:
        candidates = ~_grow(~mask, clearance) & mask
        if candidates.sum() < k:
            candidates = mask
    else:
        x1, y1, x2, y2 = (int(v) for v in mask_box(mask))
        near = np.zeros_like(mask)
        near[max(0, y1 - margin) : y2 + margin, max(0, x1 - margin) : x2 + margin] = True
        candidates = near & ~_grow(mask, clearance)
    rows, cols = np.nonzero(candidates)
    chosen = rng.choice(len(rows), size=k, replace=False)
    return tuple((float(cols[i]) + 0.5, float(rows[i]) + 0.5) for i in sorted(chosen))


def distinct(rng: np.random.Generator, pool: tuple[str, ...] | list[str], k: int) -> list[str]:
    """`k` different entries of `pool` in random order."""
    return [str(v) for v in rng.permutation(list(pool))[:k]]
