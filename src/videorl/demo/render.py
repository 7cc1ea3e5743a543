"""Pictures of an answer: a timeline bar, boxes on frames, a strip of frames, QA options.

Pure functions from numbers and uint8 frames to PIL images (and HTML for the options), so
that tests can check pixel colours at known positions. The model's answer is orange, the
ground truth green, everywhere.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from videorl.data.records import LETTERS, Box

Colour = tuple[int, int, int]
Window = tuple[float, float]

MODEL: Colour = (235, 110, 20)
TRUTH: Colour = (30, 150, 70)
TRACK: Colour = (226, 226, 226)
INK: Colour = (50, 50, 50)
PAPER: Colour = (255, 255, 255)

TIMELINE_WIDTH = 800
LABEL_WIDTH = 70  # left column with the lane names
RIGHT_PAD = 20
TOP = 10
LANE_HEIGHT = 22
LANE_GAP = 8
AXIS_HEIGHT = 30
MIN_SEGMENT_PX = 3  # a zero-length answer stays visible
TICK_STEPS = (0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600)
MAX_TICKS = 10
FRAME_HEIGHT = 180
CAPTION_HEIGHT = 20
TITLE_HEIGHT = 24
TILE_GAP = 6
BOX_LINE = 2


def font(size: int = 13) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    return ImageFont.load_default(size=size)


# ----- timeline --------------------------------------------------------------------------


def timeline_x(t: float, duration: float, width: int = TIMELINE_WIDTH) -> float:
    """Pixel column of time `t` (seconds) on a timeline of `duration` seconds."""
    span = width - LABEL_WIDTH - RIGHT_PAD
    return LABEL_WIDTH + span * min(max(t, 0.0), duration) / duration


def lane_rows(index: int) -> tuple[int, int]:
    """First and last pixel row of lane `index` (0: the model, 1: the ground truth)."""
    top = TOP + index * (LANE_HEIGHT + LANE_GAP)
    return top, top + LANE_HEIGHT - 1


def tick_step(duration: float) -> float:
    """The smallest round step that gives at most `MAX_TICKS` ticks."""
    return next((s for s in TICK_STEPS if duration / s <= MAX_TICKS), TICK_STEPS[-1])


def _seconds(t: float) -> str:
    return f"{t:g} s" if t < 120 else f"{int(t // 60)}:{int(t % 60):02d}"


def draw_timeline(
    duration: float,
    prediction: Window | None,
    truth: Sequence[Window] = (),
    width: int = TIMELINE_WIDTH,
) -> Image.Image:
    """A bar per lane over `[0, duration]`: the predicted window (orange) in the `model`
    lane and, when given, the ground-truth windows (green) in a `truth` lane below it."""
    if not duration > 0:
        raise ValueError(f"timeline duration must be positive, got {duration}")
    lanes: list[tuple[str, Colour, Sequence[Window]]] = [
        ("model", MODEL, [prediction] if prediction is not None else [])
    ]
    if truth:
        lanes.append(("truth", TRUTH, truth))
    axis_top = lane_rows(len(lanes) - 1)[1] + LANE_GAP
    image = Image.new("RGB", (width, axis_top + AXIS_HEIGHT), PAPER)
    draw = ImageDraw.Draw(image)
    x0, x_end = timeline_x(0, duration, width), timeline_x(duration, duration, width)
    for index, (name, colour, windows) in enumerate(lanes):
        top, bottom = lane_rows(index)
        draw.text((8, (top + bottom) / 2), name, fill=INK, font=font(), anchor="lm")
        draw.rectangle((x0, top, x_end, bottom), fill=TRACK)
        for start, end in windows:
            if start > duration:
                continue
            left = timeline_x(start, duration, width)
            right = max(timeline_x(end, duration, width), left + MIN_SEGMENT_PX)
            draw.rectangle((left, top, right, bottom), fill=colour)
        if not windows:
            draw.text(
                ((x0 + x_end) / 2, (top + bottom) / 2),
                "no answer",
                fill=INK,
                font=font(),
                anchor="mm",
            )
    draw.line((x0, axis_top, x_end, axis_top), fill=INK)
    step = tick_step(duration)
    for k in range(math.floor(duration / step) + 1):
        x = timeline_x(k * step, duration, width)
        draw.line((x, axis_top, x, axis_top + 5), fill=INK)
        draw.text((x, axis_top + 7), _seconds(k * step), fill=INK, font=font(11), anchor="mt")
    return image


# ----- frames and boxes ------------------------------------------------------------------


@dataclass(frozen=True)
class LabeledBox:
    """A box `[x1, y1, x2, y2]` (x2, y2 exclusive) in source pixels, its colour and name."""

    box: Box
    colour: Colour
    label: str


def to_height(frame: np.ndarray, height: int = FRAME_HEIGHT) -> tuple[Image.Image, float]:
    """The frame (`H x W x 3` uint8) scaled to `height` rows and the scale used; small
    frames grow with nearest-neighbour so pixels stay sharp."""
    image = Image.fromarray(np.ascontiguousarray(frame))
    scale = height / image.height
    size = (max(1, round(image.width * scale)), height)
    method = Image.Resampling.NEAREST if scale >= 1 else Image.Resampling.LANCZOS
    return image.resize(size, method), scale


def draw_boxes(
    frame: np.ndarray,
    boxes: Sequence[LabeledBox],
    source_size: tuple[float, float],
    height: int = FRAME_HEIGHT,
) -> Image.Image:
    """The frame scaled to `height` with each box outlined in its colour. Boxes are in the
    pixels of a `source_size = (width, height)` frame (the file's, not the resized one,
    whose aspect ratio may differ slightly)."""
    image, _ = to_height(frame, height)
    sx, sy = image.width / source_size[0], image.height / source_size[1]
    draw = ImageDraw.Draw(image)
    for item in boxes:
        x1, y1, x2, y2 = item.box[0] * sx, item.box[1] * sy, item.box[2] * sx, item.box[3] * sy
        draw.rectangle(
            (x1, y1, max(x1, x2 - 1), max(y1, y2 - 1)), outline=item.colour, width=BOX_LINE
        )
        draw.text(
            (x1 + 2, max(0, y1 - 2)),
            item.label,
            fill=item.colour,
            font=font(11),
            anchor="lb" if y1 >= 14 else "lt",
        )
    return image


def frame_strip(
    tiles: Sequence[Image.Image], captions: Sequence[str], title: str | None = None
) -> Image.Image:
    """Tiles side by side (top-aligned), each with its caption below, under an optional
    title line."""
    if not tiles:
        raise ValueError("frame_strip needs at least one tile")
    top = TITLE_HEIGHT if title else 0
    height = top + max(t.height for t in tiles) + CAPTION_HEIGHT
    width = sum(t.width for t in tiles) + TILE_GAP * (len(tiles) - 1)
    if title:
        width = max(width, math.ceil(font().getlength(title)) + 4)
    strip = Image.new("RGB", (width, height), PAPER)
    draw = ImageDraw.Draw(strip)
    if title:
        draw.text((0, top / 2), title, fill=INK, font=font(), anchor="lm")
    x = 0
    for tile, caption in zip(tiles, captions, strict=True):
        strip.paste(tile, (x, top))
        draw.text(
            (x + tile.width / 2, top + tile.height + 3),
            caption,
            fill=INK,
            font=font(12),
            anchor="mt",
        )
        x += tile.width + TILE_GAP
    return strip


# ----- multiple choice ---------------------------------------------------------------------


def options_html(options: Sequence[str], chosen: str | None, correct: str | None) -> str:
    """The options as a list: the model's letter highlighted orange, the correct one (when
    known) marked green."""
    rows = []
    for letter, text in zip(LETTERS, options, strict=False):
        marks, style = [], "padding:6px 10px;margin:4px 0;border-radius:6px;border:2px solid #ddd"
        if letter == chosen:
            style += ";background:#fde2cc;border-color:#eb6e14"
            marks.append('<b style="color:#eb6e14">model</b>')
        if letter == correct:
            style += ";outline:3px solid #1e9646"
            marks.append('<b style="color:#1e9646">truth</b>')
        classes = " ".join(
            c for c, on in (("chosen", letter == chosen), ("correct", letter == correct)) if on
        )
        rows.append(
            f'<div class="option {classes}" data-letter="{letter}" style="{style}">'
            f"{letter}. {html.escape(text)} {' '.join(marks)}</div>"
        )
    return '<div class="videorl-options">' + "".join(rows) + "</div>"
