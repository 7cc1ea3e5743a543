"""One synthetic task generator per grounding family (QA, SI and math: `synth_reasoning`).

A generator draws a scene with `rng`, writes its media under `out` and returns the record
with exact ground truth. Visual cues are simple (a colour, a position, an appearance) so a
tiny model can learn them. Times sit on a 0.5 s grid, the frames of a 2 fps sample of the
8 fps source, so the answer is visible in the frames the model sees.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import numpy as np

from videorl.data.families import Family
from videorl.data.records import (
    BoxAnswer,
    DenseCaption,
    MediaRef,
    SegmentationAnswer,
    SpatioTemporalAnswer,
    TaskRecord,
    TemporalAnswer,
    TrackingAnswer,
)
from videorl.data.synth_scene import (
    COLORS,
    SHAPES,
    Placed,
    distinct,
    mask_box,
    mask_rle,
    pick_points,
    place,
    render_frame,
    render_video,
)
from videorl.video.encode import write_image, write_mp4

SOURCE_FPS = 8
FRAME_SIZES = ((64, 64), (96, 64), (96, 96))  # (width, height), even for yuv420p
TG_DURATION = (8.0, 16.0)  # seconds, temporal grounding videos
TG_EVENT = (1.0, 1.5)  # seconds, the queried event
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


# ----- temporal grounding ----------------------------------------------------------------


def temporal_grounding(
    rng: np.random.Generator, rid: str, out: Path, events: tuple[str, ...] = TG_EVENTS
) -> TaskRecord:
    """An event over [t0, t1) of a kind drawn from `events`: a shape is visible (on an
    empty screen otherwise), turns another colour, or moves.
    Dense captions describe every segment of the timeline.

    Distributions (so that the prompt alone does not give the answer): duration uniform
    on the 0.5 s grid in [8, 16] s; event length 1 or 1.5 s (6-19% of the video); start
    uniform on the grid with 0.5 s of unchanged video before and after. The best fixed
    span as a fraction of the stated duration scores 12-13 mIoU on 64 validation videos
    (`eval/blind.py`)."""
    width, height = frame_size(rng)
    duration = half_step(rng, TG_DURATION[0], TG_DURATION[1])
    length = half_step(rng, TG_EVENT[0], TG_EVENT[1])
    t0 = half_step(rng, 0.5, duration - 0.5 - length)
    t1 = t0 + length
    kind = events[int(rng.integers(len(events)))]
    c1, c2 = distinct(rng, list(COLORS), 2)
    size = large_size(rng, width, height)
    x, y = place(rng, size, height, width)
    x_end = x
    if kind == "move":  # across the whole frame, so every sampled frame shows the motion
        x, x_end = (2, width - size - 2) if rng.integers(2) else (width - size - 2, 2)
    obj = Placed(shape(rng), c1, x, y, size)

    def at(t: float) -> list[Placed]:
        active = t0 <= t < t1
        if kind == "appear":
            return [obj] if active else []
        if kind == "colour":
            return [obj.recoloured(c2) if active else obj]
        progress = min(max((t - t0) / (t1 - t0), 0.0), 1.0)
        return [obj.moved(round(x + (x_end - x) * progress), y)]

    thing = obj.name
    if kind == "appear":
        query = f"the {thing} is visible"
        texts = (
            "the screen is empty",
            f"{article(thing)} {thing} appears and stays still",
            "the screen is empty again",
        )
    elif kind == "colour":
        query = f"the {obj.shape} is {c2}"
        texts = (
            f"{article(thing)} {thing} sits still",
            f"the {obj.shape} turns {c2}",
            f"the {obj.shape} turns back to {c1}",
        )
    else:
        query = f"the {thing} moves"
        texts = (
            f"{article(thing)} {thing} sits still",
            f"the {thing} moves sideways",
            f"the {thing} stops and stays still",
        )
    bounds = ((0.0, t0), (t0, t1), (t1, duration))
    return TaskRecord(
        id=rid,
        family=Family.TEMPORAL_GROUNDING,
        problem=query,
        answer=TemporalAnswer(((t0, t1),)),
        video=save_video(out, rid, width, height, duration, at),
        duration=duration,
        captions=tuple(
            DenseCaption(s, e, text) for (s, e), text in zip(bounds, texts, strict=True)
        ),
        subtype=kind,
        source="synth",
        width=width,
        height=height,
    )


# ----- spatial grounding and segmentation (images; video for half of segmentation) -------


def spatial_grounding(rng: np.random.Generator, rid: str, out: Path) -> TaskRecord:
    """Three shapes of different colours in an image; box the named one."""
    width, height = frame_size(rng)
    items = scatter(rng, width, height, 3)
    target = items[0]
    return TaskRecord(
        id=rid,
        family=Family.SPATIAL_GROUNDING,
        problem=f"the {target.name}",
        answer=BoxAnswer(box_of(target, width, height)),
        image=save_image(out, rid, width, height, items),
        source="synth",
        width=width,
        height=height,
    )


def segmentation(rng: np.random.Generator, rid: str, out: Path, video: bool) -> TaskRecord:
    """Segment the named shape: box, 3 positive / 3 negative points and its COCO RLE mask.
    In a video the shape is on screen only during [t0, t1); `time` is a frame inside it."""
    width, height = frame_size(rng)
    items = scatter(rng, width, height, 2)
    target, other = items
    mask = target.mask(height, width)
    if video:
        duration = half_step(rng, 3.0, 6.0)
        t0 = half_step(rng, 0.5, duration - 1.5)
        t1 = half_step(rng, t0 + 1.0, duration - 0.5)
        time: float | None = math.floor(t0 + t1) / 2  # on the 0.5 s grid, inside [t0, t1)
        media = save_video(
            out,
            rid,
            width,
            height,
            duration,
            lambda t: [other, target] if t0 <= t < t1 else [other],
        )
    else:
        duration, time = None, None
        media = save_image(out, rid, width, height, items)
    answer = SegmentationAnswer(
        box=mask_box(mask),
        positive_points=pick_points(rng, mask, inside=True),
        negative_points=pick_points(rng, mask, inside=False),
        time=time,
        mask_rle=mask_rle(mask),
    )
    return TaskRecord(
        id=rid,
        family=Family.SEGMENTATION,
        problem=f"the {target.name}",
        answer=answer,
        video=media if video else None,
        image=None if video else media,
        duration=duration,
        subtype="video" if video else "image",
        source="synth",
        width=width,
        height=height,
    )


# ----- tracking and spatio-temporal grounding ----------------------------------------------


def tracking(rng: np.random.Generator, rid: str, out: Path) -> TaskRecord:
    """A shape bouncing around a static distractor; its box in frame 0 is given
    (`extra.first_box`), boxes every 0.5 s (every 4th source frame) are the answer."""
    width, height = frame_size(rng)
    duration = half_step(rng, 4.0, 8.0)
    distractor, target = scatter(rng, width, height, 2)
    vx, vy = (int(v) for v in rng.choice([-2, -1, 1, 2], size=2))

    def position(frame: int) -> Placed:
        return target.moved(
            bounce(target.x + vx * frame, 0, width - target.size),
            bounce(target.y + vy * frame, 0, height - target.size),
        )

    media = save_video(
        out,
        rid,
        width,
        height,
        duration,
        lambda t: [distractor, position(round(t * SOURCE_FPS))],
    )
    step = SOURCE_FPS // 2
    num_frames = round(duration * SOURCE_FPS)
    boxes = {str(f): box_of(position(f), width, height) for f in range(step, num_frames, step)}
    return TaskRecord(
        id=rid,
        family=Family.TRACKING,
        problem=f"the {target.name}",
        answer=TrackingAnswer(boxes),
        video=media,
        duration=duration,
        source="synth",
        width=width,
        height=height,
        extra={"first_box": list(box_of(target, width, height)), "source_fps": SOURCE_FPS},
    )


def spatio_temporal_grounding(rng: np.random.Generator, rid: str, out: Path) -> TaskRecord:
    """A shape crosses the upper half during [t0, t1) while a distractor sits in the lower
    half; the answer is the window and the shape's box at each whole second inside it."""
    width, height = frame_size(rng)
    duration = half_step(rng, 5.0, 8.0)
    t0 = half_step(rng, 0.5, duration - 3.0)
    t1 = half_step(rng, t0 + 2.0, duration - 0.5)
    size = int(rng.integers(10, 15))
    c_target, c_other = distinct(rng, list(COLORS), 2)
    y = int(rng.integers(0, height // 2 - size + 1))
    target = Placed(shape(rng), c_target, 2, y, size)
    x_end = width - size - 2
    other = Placed(
        shape(rng),
        c_other,
        int(rng.integers(0, width - size + 1)),
        int(rng.integers(height // 2, height - size + 1)),
        size,
    )

    def at_time(t: float) -> Placed:
        return target.moved(round(2 + (x_end - 2) * (t - t0) / (t1 - t0)), y)

    media = save_video(
        out,
        rid,
        width,
        height,
        duration,
        lambda t: [other, at_time(t)] if t0 <= t < t1 else [other],
    )
    seconds = range(math.ceil(t0), math.ceil(t1))
    boxes = {str(s): box_of(at_time(float(s)), width, height) for s in seconds}
    return TaskRecord(
        id=rid,
        family=Family.SPATIO_TEMPORAL_GROUNDING,
        problem=f"the {target.name}",
        answer=SpatioTemporalAnswer(time=(t0, t1), boxes=boxes),
        video=media,
        duration=duration,
        source="synth",
        width=width,
        height=height,
    )
