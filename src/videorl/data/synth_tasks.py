"""What the synthetic generators share (each family's generator is its
`tasks/<family>/synth.py`): frame sizes, shapes, timelines, writing the media and the record.

A generator draws a scene with `rng`, writes its media under `out` and returns the record
with exact ground truth. Visual cues are simple (a colour, a position, an appearance) so a
tiny model can learn them. Times sit on a 0.5 s grid, the frames of a 2 fps sample of the
8 fps source, so the answer is visible in the frames the model sees.
"""

from __future__ import annotations

import math
from collections.abc import Callable
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


def large_size(rng: np.random.Generator, width: int, height: int) -> int:
    """A shape size of 40-60% of the frame's short side: the shape covers a large share of a
    small model's visual tokens (a 64 px frame at 56 x 56 px is 4 tokens per frame pair;
    shapes of 10-20 px changed one token and a tiny model never learned to see them:
    docs/lab/models-that-see.md)."""
    short = min(width, height)
    return int(rng.integers(round(0.4 * short), round(0.6 * short) + 1))


def half_step(rng: np.random.Generator, low: float, high: float) -> float:
    """A random multiple of 0.5 in [low, high]."""
    return float(rng.integers(math.ceil(low * 2), math.floor(high * 2) + 1)) / 2


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
