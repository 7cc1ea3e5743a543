"""Held-out temporal-grounding scenes: data that no recipe setting and no vision warm-up is
tuned on, to check that a model which learned to see on the quickstart's videos was not
tuned to them (issue 45).

Same timing and format as `videorl synth --families temporal_grounding --tg-grid 1` (the
quickstart's data): 8 fps MP4s of 64-96 px, 8-16 whole seconds, one event of 1 or 2 s on
whole seconds with at least 1 s of unchanged video around it, the answer `[t0, t1)` in
seconds (`--tg-grid 0.5`: events of 1 or 1.5 s on the 0.5 s grid, as measured until
2026-12-08, when durations were also drawn on the 0.5 s grid). Only the scenes differ:

- `drift`: a striped or checkered background that scrolls in a random direction, 3-5 small
  shapes (10-16% of the short side) bouncing around; the event is a flash (every pixel
  halfway to white), a large shape appearing, or a large shape (on screen throughout)
  changing colour.
- `pan`: a blotchy (smoothed-noise) background under a panning camera that moves every
  object with it, sensor noise on every frame, a slow brightness drift of +-15%, one large
  shape throughout; the event is the screen going dark (pixels x0.35), the shape vanishing,
  or the shape growing by 1.5x.

    PYTHONPATH=src python bench/heldout.py --scene drift --out runs/heldout/drift --n 256 --val 32
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from videorl.data.families import Family
from videorl.data.loaders import write_records
from videorl.data.records import DenseCaption, MediaRef, TaskRecord, TemporalAnswer
from videorl.data.synth_scene import COLORS, SHAPES, Placed, distinct, place
from videorl.data.synth_tasks import SOURCE_FPS, TG_GRIDS, article, frame_size, large_size
from videorl.tasks.temporal_grounding.synth import tg_timing
from videorl.video.encode import write_mp4

SCENES = ("drift", "pan")
EVENTS = {"drift": ("flash", "appear", "colour"), "pan": ("dark", "vanish", "grow")}
SCENE_IDS = {"drift": 101, "pan": 102}  # rng streams apart from synth's family indices


@dataclass(frozen=True)
class Timeline:
    """The drawn event: kind, `[t0, t1)` seconds, video length, the large shape and, for a
    colour change, its colour during the event."""

    kind: str
    t0: float
    t1: float
    duration: float
    obj: Placed
    other: str


def _timeline(
    rng: np.random.Generator, scene: str, width: int, height: int, grid: float
) -> Timeline:
    """synth's temporal-grounding timing on `grid` (`tg_timing`) with this scene's events."""
    duration, t0, t1 = tg_timing(rng, grid)
    kind = EVENTS[scene][int(rng.integers(len(EVENTS[scene])))]
    c1, c2 = distinct(rng, list(COLORS), 2)
    size = large_size(rng, width, height)
    if kind == "grow":  # room to grow by 1.5x around the same centre
        size = min(size, int(min(width, height) / 1.6))
    x, y = place(rng, size, height, width)
    obj = Placed(SHAPES[int(rng.integers(len(SHAPES)))], c1, x, y, size)
    return Timeline(kind, t0, t1, duration, obj, c2)


def _stripes(rng: np.random.Generator, height: int, width: int) -> np.ndarray:
    """A periodic float RGB texture twice the frame's size (to scroll over): stripes or a
    checkerboard of two dark-to-mid colours, period 6-12 px."""
    rows, cols = np.mgrid[0 : 2 * height, 0 : 2 * width]
    period = int(rng.integers(6, 13))
    if rng.integers(2):
        angle = rng.uniform(0, np.pi)
        phase = (cols * np.cos(angle) + rows * np.sin(angle)) / period
        on = (np.floor(phase) % 2).astype(bool)
    else:
        on = ((rows // period + cols // period) % 2).astype(bool)
    a, b = rng.uniform(20, 110, 3), rng.uniform(20, 110, 3)
    return np.where(on[..., None], a, b)


def _blotches(rng: np.random.Generator, height: int, width: int) -> np.ndarray:
    """A smooth random float RGB texture twice the frame's size: noise on a coarse grid,
    upsampled bilinearly (blobs of ~8-16 px), values 20-140."""
    cell = int(rng.integers(8, 17))
    gh, gw = 2 * height // cell + 2, 2 * width // cell + 2
    coarse = rng.uniform(20, 140, (gh, gw, 3))
    ys = np.arange(2 * height) / cell
    xs = np.arange(2 * width) / cell
    y0, x0 = np.floor(ys).astype(int), np.floor(xs).astype(int)
    fy, fx = (ys - y0)[:, None, None], (xs - x0)[None, :, None]
    top = coarse[y0][:, x0] * (1 - fx) + coarse[y0][:, x0 + 1] * fx
    bottom = coarse[y0 + 1][:, x0] * (1 - fx) + coarse[y0 + 1][:, x0 + 1] * fx
    return top * (1 - fy) + bottom * fy


def _paint(frame: np.ndarray, item: Placed, dx: int = 0, dy: int = 0) -> None:
    """Draw `item` shifted by (dx, dy) px into the float frame (clipped at the borders)."""
    height, width = frame.shape[:2]
    frame[item.moved(item.x + dx, item.y + dy).mask(height, width)] = COLORS[item.color]


def _distractors(
    rng: np.random.Generator, width: int, height: int
) -> list[tuple[Placed, float, float]]:
    """3-5 small shapes with velocities (px/s) of 4-12 px/s in random directions."""
    short = min(width, height)
    items = []
    for color in distinct(rng, list(COLORS), int(rng.integers(3, 6))):
        size = int(rng.integers(round(0.10 * short), round(0.16 * short) + 1))
        x, y = int(rng.integers(0, width - size + 1)), int(rng.integers(0, height - size + 1))
        speed, angle = rng.uniform(4, 12), rng.uniform(0, 2 * np.pi)
        item = Placed(SHAPES[int(rng.integers(2))], color, x, y, size)
        items.append((item, speed * np.cos(angle), speed * np.sin(angle)))
    return items


def _bounce(start: float, speed: float, t: float, high: int) -> int:
    span = max(high, 1)
    m = (start + speed * t) % (2 * span)
    return round(m if m <= span else 2 * span - m)


def drift_video(rng: np.random.Generator, width: int, height: int, tl: Timeline) -> np.ndarray:
    """uint8 frames of the `drift` scene (module doc)."""
    texture = _stripes(rng, height, width)
    vx, vy = rng.uniform(-10, 10, 2)  # background scroll, px/s
    movers = _distractors(rng, width, height)
    frames = []
    for k in range(round(tl.duration * SOURCE_FPS)):
        t = k / SOURCE_FPS
        active = tl.t0 <= t < tl.t1
        ox, oy = int(vx * t) % width, int(vy * t) % height
        frame = texture[oy : oy + height, ox : ox + width].copy()
        for item, sx, sy in movers:
            x = _bounce(item.x, sx, t, width - item.size)
            y = _bounce(item.y, sy, t, height - item.size)
            _paint(frame, item.moved(x, y))
        if tl.kind == "colour":
            _paint(frame, tl.obj.recoloured(tl.other) if active else tl.obj)
        elif tl.kind == "appear" and active:
            _paint(frame, tl.obj)
        if tl.kind == "flash" and active:
            frame = frame + 0.5 * (255 - frame)
        frames.append(frame)
    return np.clip(np.stack(frames), 0, 255).astype(np.uint8)


def pan_video(rng: np.random.Generator, width: int, height: int, tl: Timeline) -> np.ndarray:
    """uint8 frames of the `pan` scene (module doc)."""
    texture = _blotches(rng, height, width)
    amp_x, amp_y = rng.uniform(3, 0.25 * width), rng.uniform(2, 0.15 * height)
    period, phase = rng.uniform(4, 10), rng.uniform(0, 2 * np.pi)
    drift_period, drift_phase = rng.uniform(5, 12), rng.uniform(0, 2 * np.pi)
    obj = tl.obj
    grown_size = round(obj.size * 1.5)
    grown = Placed(
        obj.shape, obj.color, obj.x - (grown_size - obj.size) // 2,
        obj.y - (grown_size - obj.size) // 2, grown_size,
    )  # fmt: skip
    frames = []
    for k in range(round(tl.duration * SOURCE_FPS)):
        t = k / SOURCE_FPS
        active = tl.t0 <= t < tl.t1
        # the camera: a smooth sway of the whole scene, objects included
        dx = round(amp_x * np.sin(2 * np.pi * t / period + phase))
        dy = round(amp_y * np.cos(2 * np.pi * t / period + phase))
        ox, oy = width // 2 + dx, height // 2 + dy
        frame = texture[oy : oy + height, ox : ox + width].copy()
        if not (tl.kind == "vanish" and active):
            _paint(frame, grown if tl.kind == "grow" and active else obj, -dx // 3, -dy // 3)
        gain = 1 + 0.15 * np.sin(2 * np.pi * t / drift_period + drift_phase)
        frame = frame * gain * (0.35 if tl.kind == "dark" and active else 1.0)
        frames.append(frame + rng.normal(0, 8, frame.shape))
    return np.clip(np.stack(frames), 0, 255).astype(np.uint8)


def _query(tl: Timeline) -> tuple[str, tuple[str, str, str]]:
    """The question and the three segments' captions."""
    thing, shape = tl.obj.name, tl.obj.shape
    texts = {
        "flash": ("the screen flashes", "patterns drift", "the screen flashes", "patterns drift"),
        "appear": (
            f"the {thing} is visible", "patterns drift",
            f"{article(thing)} {thing} appears", f"the {thing} is gone",
        ),
        "colour": (
            f"the {shape} is {tl.other}", f"{article(thing)} {thing} sits still",
            f"the {shape} turns {tl.other}", f"the {shape} turns back",
        ),
        "dark": ("the screen is dark", "the camera sways", "the lights go out", "the lights return"),
        "vanish": (
            f"the {thing} is hidden", f"{article(thing)} {thing} is in view",
            f"the {thing} vanishes", f"the {thing} is back",
        ),
        "grow": (
            f"the {shape} is large", f"{article(thing)} {thing} is in view",
            f"the {shape} grows", f"the {shape} shrinks back",
        ),
    }[tl.kind]  # fmt: skip
    return texts[0], (texts[1], texts[2], texts[3])


RENDER: dict[str, Callable[[np.random.Generator, int, int, Timeline], np.ndarray]] = {
    "drift": drift_video,
    "pan": pan_video,
}


def heldout_record(
    scene: str, index: int, seed: int, out: Path, split: str, grid: float
) -> TaskRecord:
    """Record `index` of `scene` in `split` (train | val), its video under `out/videos`, its
    bounds on `grid` seconds."""
    rng = np.random.default_rng([seed, SCENE_IDS[scene], ("train", "val").index(split), index])
    rid = f"{scene}-{'' if split == 'train' else split + '-'}{index:04d}"
    width, height = frame_size(rng)
    tl = _timeline(rng, scene, width, height, grid)
    relative = f"videos/{rid}.mp4"
    write_mp4(out / relative, RENDER[scene](rng, width, height, tl), SOURCE_FPS)
    query, texts = _query(tl)
    bounds = ((0.0, tl.t0), (tl.t0, tl.t1), (tl.t1, tl.duration))
    return TaskRecord(
        id=rid,
        family=Family("temporal_grounding"),
        problem=query,
        answer=TemporalAnswer(((tl.t0, tl.t1),)),
        video=MediaRef(path=relative),
        duration=tl.duration,
        captions=tuple(DenseCaption(s, e, c) for (s, e), c in zip(bounds, texts, strict=True)),
        subtype=tl.kind,
        source=f"heldout-{scene}",
        width=width,
        height=height,
    )


def write_heldout(
    out: Path, scene: str, n: int, val: int, seed: int = 0, grid: float = 1.0
) -> dict[str, int]:
    """`out/train.jsonl` (n records) and `out/val.jsonl` (val records) of `scene`, like
    `videorl synth --out out --tg-grid grid` writes them; returns the counts."""
    if scene not in SCENES:
        raise SystemExit(f"--scene {scene}: choose one of {', '.join(SCENES)}")
    if grid not in TG_GRIDS:
        raise SystemExit(f"--tg-grid {grid}: choose one of {', '.join(map(str, TG_GRIDS))}")
    out.mkdir(parents=True, exist_ok=True)
    for split, count in (("train", n), ("val", val)):
        if count:
            records = [heldout_record(scene, k, seed, out, split, grid) for k in range(count)]
            write_records(out / f"{split}.jsonl", records)
    manifest = {"scene": scene, "n": n, "val": val, "seed": seed, "tg_grid": grid}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return {"train": n, "val": val}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scene", choices=SCENES, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--n", type=int, default=256)
    parser.add_argument("--val", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tg-grid", type=float, default=1.0, help="the bounds' grid, seconds")
    args = parser.parse_args()
    print(write_heldout(args.out, args.scene, args.n, args.val, args.seed, args.tg_grid))


if __name__ == "__main__":
    main()
