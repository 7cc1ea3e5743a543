"""What the synthetic generators share (each family's generator is its
`tasks/<family>/synth.py`): frame sizes, shapes, timelines, writing the media and the record.

A generator draws a scene with `rng`, writes its media under `out` and returns the record
with exact ground truth. Visual cues are simple (a colour, a position, an appearance) so a
tiny model can learn them. Times sit on a 0.5 s grid, the frames of a 2 fps sample of the
8 fps source, so the answer is visible in the frames the model sees.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from videorl.data.families import Family
from videorl.data.records import (
    Answer,
    MediaRef,
    TaskRecord,
)
from videorl.data.synth_scene import (
    COLORS,
    SHAPES,
    Placed,
    distinct,
    mask_box,
    place,
    render_frame,
    render_video,
)
from videorl.video.encode import write_image, write_mp4

SOURCE_FPS = 8
FRAME_SIZES = ((64, 64), (96, 64), (96, 96))  # (width, height), even for yuv420p
TG_EVENTS = ("appear", "colour", "move")  # kinds of temporal-grounding event
# Grids of temporal-grounding event bounds, seconds (the first is the default): a frame of a
# 2 fps sample, or a temporal patch of two such frames (Qwen2.5-VL and Qwen3-VL), which is one
# group of visual tokens and, in Qwen3-VL, one textual timestamp ("<6.2 seconds>" for 6.0-6.5 s)
TG_GRIDS = (0.5, 1.0)
# The spatial families' scenes (spatial grounding, segmentation, tracking, spatio-temporal
# grounding) sit on the tiny Qwen3-VL's patch grid: CELL px patches, 2 x 2 of them per visual
# token. Their objects span whole patches and several of them (the 10-20 px shapes of the
# other families changed one token, and a tiny model never learned to box them:
# docs/lab/models-that-see.md, section 15); frame sides of 64 or 128 px put every patch edge
# on a whole number of the 0-1000 coordinates (16 px = 250 or 125), so boxes stay short.
CELL = 16
GRID_FRAMES = ((64, 64), (128, 64), (64, 128))  # (width, height)


def large_size(rng: np.random.Generator, width: int, height: int) -> int:
    """A shape size of 40-60% of the frame's short side: the shape covers a large share of a
    small model's visual tokens (a 64 px frame at 56 x 56 px is 4 tokens per frame pair;
    shapes of 10-20 px changed one token and a tiny model never learned to see them:
    docs/lab/models-that-see.md)."""
    short = min(width, height)
    return int(rng.integers(round(0.4 * short), round(0.6 * short) + 1))


def whole_seconds(rng: np.random.Generator, low: float, high: float) -> float:
    """A random whole number of seconds in [low, high]: a 2 fps sample of it (an even frame
    count, `video/sampling.py`) has a stride of exactly 4 source frames at 8 fps, so every
    0.5 s boundary is a frame the model sees. A 13.5 s video is sampled as 26 frames at a
    stride of 4.15 (timestamps 3.625, 4.125, ...) and shows none of the 0.5 s grid after 3 s."""
    return float(rng.integers(math.ceil(low), math.floor(high) + 1))


def half_step(rng: np.random.Generator, low: float, high: float) -> float:
    """A random multiple of 0.5 in [low, high]."""
    return multiple_of(rng, low, high, 0.5)


def multiple_of(rng: np.random.Generator, low: float, high: float, step: float) -> float:
    """A random multiple of `step` in [low, high] (`step` a power of two: exact in floats)."""
    return float(rng.integers(math.ceil(low / step), math.floor(high / step) + 1)) * step


def article(noun: str) -> str:
    return "an" if noun[0] in "aeiou" else "a"


def frame_size(rng: np.random.Generator) -> tuple[int, int]:
    return FRAME_SIZES[int(rng.integers(len(FRAME_SIZES)))]


def shape(rng: np.random.Generator) -> str:
    return SHAPES[int(rng.integers(len(SHAPES)))]


def save_video(
    out: Path,
    rid: str,
    width: int,
    height: int,
    duration: float,
    at: Callable[[float], list[Placed]],
) -> MediaRef:
    """Render the timeline `at` (seconds -> shapes on screen) to `out/videos/<rid>.mp4`."""
    relative = f"videos/{rid}.mp4"
    write_mp4(out / relative, render_video(height, width, SOURCE_FPS, duration, at), SOURCE_FPS)
    return MediaRef(path=relative)


def save_image(out: Path, rid: str, width: int, height: int, items: list[Placed]) -> MediaRef:
    relative = f"images/{rid}.png"
    write_image(out / relative, render_frame(height, width, items))
    return MediaRef(path=relative)


def scatter(
    rng: np.random.Generator, width: int, height: int, k: int, sizes: tuple[int, int] = (10, 20)
) -> list[Placed]:
    """`k` non-touching shapes of distinct colours and sizes in `sizes` (px, inclusive)."""
    items: list[Placed] = []
    for color in distinct(rng, list(COLORS), k):
        size = int(rng.integers(sizes[0], sizes[1] + 1))
        x, y = place(rng, size, height, width, items)
        items.append(Placed(shape(rng), color, x, y, size))
    return items


def grid_frame(rng: np.random.Generator) -> tuple[int, int]:
    """A (width, height) of `GRID_FRAMES`."""
    return GRID_FRAMES[int(rng.integers(len(GRID_FRAMES)))]


def on_grid(
    rng: np.random.Generator,
    width: int,
    height: int,
    color: str,
    cells: int = 2,
    avoid: Sequence[Placed] = (),
) -> Placed:
    """A shape `cells` patches wide in `color` with its corner on the patch grid, not
    overlapping any shape in `avoid` (it may touch one)."""
    size = cells * CELL
    spots = [
        (x, y)
        for x in range(0, width - size + 1, CELL)
        for y in range(0, height - size + 1, CELL)
        if not any(_overlaps(x, y, size, other) for other in avoid)
    ]
    if not spots:
        raise RuntimeError(f"no free grid place for a {size} px shape in {width}x{height}")
    x, y = spots[int(rng.integers(len(spots)))]
    return Placed(shape(rng), color, x, y, size)


def _overlaps(x: int, y: int, size: int, other: Placed) -> bool:
    return (
        x < other.x + other.size
        and other.x < x + size
        and y < other.y + other.size
        and other.y < y + size
    )


def grid_scene(
    rng: np.random.Generator, width: int, height: int, small: int = 1
) -> tuple[Placed, list[Placed]]:
    """The target (two patches wide, on the grid) and `small` distractors of 6-10 px
    elsewhere, every colour distinct: the named object is the one to box, the others are
    clutter a model must not box."""
    colors = distinct(rng, list(COLORS), 1 + small)
    target = on_grid(rng, width, height, colors[0])
    others: list[Placed] = []
    for color in colors[1:]:
        size = int(rng.integers(6, 11))
        x, y = place(rng, size, height, width, [target, *others])
        others.append(Placed(shape(rng), color, x, y, size))
    return target, others


def appearing(
    items: list[Placed], first: float = 0.5, gap: float = 1.0
) -> Callable[[float], list[Placed]]:
    """Timeline where item k is on screen from `first + k * gap` seconds on."""

    def at(t: float) -> list[Placed]:
        return [item for k, item in enumerate(items) if t >= first + k * gap]

    return at


def bounce(position: float, low: int, high: int) -> int:
    """Position reflected back and forth inside [low, high] (a ball between two walls)."""
    span = high - low
    m = (position - low) % (2 * span)
    return round(low + (m if m <= span else 2 * span - m))


def box_of(item: Placed, width: int, height: int) -> tuple[float, float, float, float]:
    return mask_box(item.mask(height, width))


def synth_record(
    family: str,
    rid: str,
    problem: str,
    answer: Answer,
    size: tuple[int, int] | None = None,
    video: MediaRef | None = None,
    duration: float | None = None,
    **fields: Any,
) -> TaskRecord:
    """A synthetic record of `family` (`source` "synth") in a `size` = (width, height)
    frame, with its `video` of `duration` seconds; `fields` are its other `TaskRecord`
    fields (an image, options, ...)."""
    if size is not None:
        fields["width"], fields["height"] = size
    return TaskRecord(
        id=rid,
        family=Family(family),
        problem=problem,
        answer=answer,
        video=video,
        duration=duration,
        source="synth",
        **fields,
    )
