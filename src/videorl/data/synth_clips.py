"""Generic synthetic clips for the vision warm-up (`models/vision_warmup.py`): a broad
distribution of scenes, each drawn twice, as observed and as its clean content.

A clip is two layers. The *nuisance* layer: a background texture (plain, stripes, checks
or smooth blotches) that scrolls, a camera that sways (it moves the objects too), and
sensor noise. The *content* layer: 1-6 shapes of 8-60% of the short side, each of its
own colour, moving or still, on screen over a random interval or throughout, some
changing colour over an interval; and, in some clips, a global brightness change over an
interval (a flash or a dimming). Frame sizes 64-112 px, 8-32 frames, motion per frame
scaled by a random frame rate (0.5x-2x).

`observed` is what a camera would record; `clean` is the same content (same positions,
colours and brightness) over the texture's mean colour without noise. The warm-up's
targets come from `clean`, its inputs from `observed`: content changes move the targets,
nuisance does not. No task, question or answer; nothing of the held-out scenes
(`bench/heldout.py`) is drawn here, and none of their event kinds is drawn specially.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from videorl.data.synth_scene import COLORS, SHAPES, Placed, place, render_frame

CLIP_SIZES = ((64, 64), (96, 64), (96, 96), (64, 96), (112, 80))  # (width, height), even
SHAPE_SIZES = ((64, 64), (96, 64), (96, 96))  # the quickstart data's frames
TEXTURES = ("plain", "stripes", "checks", "blotches")


@dataclass(frozen=True)
class Mover:
    """A content shape: where it starts, its velocity (px per frame), when it is on screen
    and when (if ever) it shows `other` colour."""

    item: Placed
    vx: float
    vy: float
    shown: tuple[int, int]
    recolour: tuple[int, int]
    other: str


def _interval(rng: np.random.Generator, frames: int) -> tuple[int, int]:
    first = int(rng.integers(0, frames))
    return first, int(rng.integers(first + 1, frames + 1))


def _texture(rng: np.random.Generator, height: int, width: int, kind: str) -> np.ndarray:
    """A float RGB texture of `kind`, twice the frame's size (to scroll over), on a random
    base colour."""
    base = rng.uniform(0, 120, 3)
    if kind == "plain":
        return np.broadcast_to(base, (2 * height, 2 * width, 3)).copy()
    rows, cols = np.mgrid[0 : 2 * height, 0 : 2 * width]
    amplitude = rng.uniform(10, 60, 3)
    if kind == "blotches":
        cell = int(rng.integers(6, 20))
        coarse = rng.uniform(-1, 1, (2 * height // cell + 2, 2 * width // cell + 2, 3))
        smooth = _box_blur(coarse[rows // cell, cols // cell], cell)  # blocks, blurred
        return base + amplitude * smooth / max(float(np.abs(smooth).max()), 1e-6)
    period = int(rng.integers(4, 16))
    if kind == "stripes":
        angle = rng.uniform(0, np.pi)
        on = np.floor((cols * np.cos(angle) + rows * np.sin(angle)) / period) % 2
    else:
        on = (rows // period + cols // period) % 2
    return base + amplitude * (2 * on[..., None] - 1)


def _box_blur(image: np.ndarray, width: int) -> np.ndarray:
    """Mean over a `width` x `width` window (edges padded by repetition), per channel."""
    for axis in (0, 1):
        pad = [(0, 0)] * image.ndim
        pad[axis] = (width // 2, width - width // 2)
        sums = np.cumsum(np.pad(image, pad, mode="edge"), axis=axis)
        size = image.shape[axis]
        image = (sums.take(range(width, width + size), axis) - sums.take(range(size), axis)) / width
    return image


def _movers(
    rng: np.random.Generator, width: int, height: int, frames: int, rate: float
) -> list[Mover]:
    short = min(width, height)
    movers = []
    for _ in range(int(rng.integers(1, 7))):
        size = int(rng.integers(round(0.08 * short), round(0.6 * short) + 1))
        x, y = int(rng.integers(0, width - size + 1)), int(rng.integers(0, height - size + 1))
        color, other = (str(c) for c in rng.choice(list(COLORS), 2, replace=False))
        speed = rng.uniform(0, 6) * rate if rng.random() < 0.5 else 0.0
        angle = rng.uniform(0, 2 * np.pi)
        shown = _interval(rng, frames) if rng.random() < 0.6 else (0, frames)
        recolour = _interval(rng, frames) if rng.random() < 0.3 else (0, 0)
        item = Placed(SHAPES[int(rng.integers(len(SHAPES)))], color, x, y, size)
        movers.append(
            Mover(item, speed * np.cos(angle), speed * np.sin(angle), shown, recolour, other)
        )
    return movers


def _reflect(position: float, high: int) -> int:
    span = max(high, 1)
    m = position % (2 * span)
    return round(m if m <= span else 2 * span - m)


@dataclass(frozen=True)
class Change:
    """A content change of a clip, as a grounding question: `question` holds over frames
    `[first, last)`."""

    question: str
    first: int
    last: int


def warmup_clip(
    rng: np.random.Generator, frames: tuple[int, int] = (8, 32)
) -> tuple[np.ndarray, np.ndarray]:
    """(observed, clean): uint8 `T x H x W x 3` frames of one drawn scene (module doc); T is
    even, within `frames`."""
    observed, clean, _ = warmup_scene(rng, frames)
    return observed, clean


def warmup_scene(
    rng: np.random.Generator, frames: tuple[int, int] = (8, 32)
) -> tuple[np.ndarray, np.ndarray, list[Change]]:
    """`warmup_clip`'s frames and its content changes (`changes`)."""
    width, height = CLIP_SIZES[int(rng.integers(len(CLIP_SIZES)))]
    count = 2 * int(rng.integers(frames[0] // 2, frames[1] // 2 + 1))
    rate = float(rng.choice([0.5, 1.0, 2.0]))  # motion per frame: a lower or higher fps
    texture = _texture(rng, height, width, TEXTURES[int(rng.integers(len(TEXTURES)))])
    mean = texture.mean((0, 1))
    scroll = rng.uniform(-6, 6, 2) * rate if rng.random() < 0.6 else np.zeros(2)
    sway = rng.uniform(0, 0.2 * min(width, height)) if rng.random() < 0.4 else 0.0
    period = rng.uniform(4, 16) / rate
    noise = rng.uniform(0, 12) if rng.random() < 0.5 else 0.0
    lights = _interval(rng, count) if rng.random() < 0.25 else (0, 0)
    gain = float(rng.choice([rng.uniform(0.3, 0.7), rng.uniform(1.4, 2.0)]))
    movers = _movers(rng, width, height, count, rate)
    observed, clean = [], []
    for k in range(count):
        dx, dy = (round(sway * np.sin(2 * np.pi * k / period)), 0) if sway else (0, 0)
        ox, oy = (int(scroll[0] * k + dx) % width, int(scroll[1] * k + dy) % height)
        frame = texture[oy : oy + height, ox : ox + width].copy()
        plain = np.broadcast_to(mean, frame.shape).copy()
        for m in movers:
            if not m.shown[0] <= k < m.shown[1]:
                continue
            x = _reflect(m.item.x + m.vx * k, width - m.item.size) - dx
            y = _reflect(m.item.y + m.vy * k, height - m.item.size) - dy
            colour = m.other if m.recolour[0] <= k < m.recolour[1] else m.item.color
            mask = m.item.moved(x, y).mask(height, width)
            frame[mask] = plain[mask] = COLORS[colour]
        scale = gain if lights[0] <= k < lights[1] else 1.0
        observed.append(frame * scale + (rng.normal(0, noise, frame.shape) if noise else 0))
        clean.append(plain * scale)
    return _uint8(observed), _uint8(clean), changes(movers, lights, gain, count)


def changes(movers: list[Mover], lights: tuple[int, int], gain: float, count: int) -> list[Change]:
    """The clip's changes that a question can name without ambiguity: a shape on screen over
    part of the clip, a shape shown in another colour, the scene brighter or darker."""
    names = [f"{m.item.color} {m.item.shape}" for m in movers]
    found = []
    for m, name in zip(movers, names, strict=True):
        if names.count(name) > 1:  # "the red circle" would name two shapes
            continue
        if 0 < m.shown[1] - m.shown[0] < count:
            found.append(Change(f"When is the {name} on screen?", *m.shown))
        first, last = max(m.recolour[0], m.shown[0]), min(m.recolour[1], m.shown[1])
        if 0 < last - first < count:
            found.append(Change(f"When is the {name} shown in {m.other}?", first, last))
    if 0 < lights[1] - lights[0] < count:
        word = "darker" if gain < 1 else "brighter"
        found.append(Change(f"When is the scene {word}?", *lights))
    return found


def _uint8(frames: list[np.ndarray]) -> np.ndarray:
    return np.clip(np.rint(np.stack(frames)), 0, 255).astype(np.uint8)


def shape_clip(
    rng: np.random.Generator, frames: tuple[int, int] = (8, 32)
) -> tuple[np.ndarray, np.ndarray]:
    """(clip, clip): the narrow distribution of the first warm-up, the quickstart's scenes
    without their task: one shape (20-60% of the short side) on screen over a random
    interval of at least one frame, on the synthetic plain background elsewhere; no
    nuisance, so observed and clean are the same frames."""
    clip, _, _ = shape_scene(rng, frames)
    return clip, clip


def shape_scene(
    rng: np.random.Generator, frames: tuple[int, int] = (8, 32)
) -> tuple[np.ndarray, np.ndarray, list[Change]]:
    """`shape_clip`'s frames (twice) and its change: the shape on screen, unless it is on
    screen throughout."""
    width, height = SHAPE_SIZES[int(rng.integers(len(SHAPE_SIZES)))]
    pairs = int(rng.integers(frames[0] // 2, frames[1] // 2 + 1))
    short = min(width, height)
    size = int(rng.integers(round(0.2 * short), round(0.6 * short) + 1))
    x, y = place(rng, size, height, width)
    color = list(COLORS)[int(rng.integers(len(COLORS)))]
    item = Placed(SHAPES[int(rng.integers(len(SHAPES)))], color, x, y, size)
    first = int(rng.integers(0, 2 * pairs))
    last = int(rng.integers(first + 1, 2 * pairs + 1))
    empty, shown = render_frame(height, width, []), render_frame(height, width, [item])
    clip = np.stack([shown if first <= k < last else empty for k in range(2 * pairs)])
    partial = last - first < 2 * pairs
    found = [Change(f"When is the {color} {item.shape} on screen?", first, last)] if partial else []
    return clip, clip, found


CLIP_KINDS = {"broad": warmup_clip, "shape": shape_clip}
SCENE_KINDS = {"broad": warmup_scene, "shape": shape_scene}  # with their changes
