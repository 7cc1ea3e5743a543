"""The demo's pictures on fixed inputs: colours at known pixel positions."""

from __future__ import annotations

from typing import cast

import numpy as np
import pytest
from PIL import Image

from videorl.demo.render import (
    MODEL,
    PAPER,
    TILE_GAP,
    TITLE_HEIGHT,
    TRACK,
    TRUTH,
    LabeledBox,
    draw_boxes,
    draw_timeline,
    frame_strip,
    lane_rows,
    options_html,
    tick_step,
    timeline_x,
)


def lane_middle(index: int) -> int:
    top, bottom = lane_rows(index)
    return (top + bottom) // 2


def at(image: Image.Image, t: float, lane: int, duration: float) -> tuple[int, int, int]:
    pixel = image.getpixel((round(timeline_x(t, duration, image.width)), lane_middle(lane)))
    return cast(tuple[int, int, int], pixel)  # an RGB image


def test_timeline_draws_answer_and_truth_in_their_lanes():
    image = draw_timeline(10.0, prediction=(2.0, 4.0), truth=[(5.0, 8.0)])
    assert at(image, 3.0, 0, 10.0) == MODEL
    assert at(image, 6.0, 0, 10.0) == TRACK
    assert at(image, 6.0, 1, 10.0) == TRUTH
    assert at(image, 3.0, 1, 10.0) == TRACK
    assert at(image, 9.0, 1, 10.0) == TRACK
    # the segment ends where its times map to
    assert at(image, 1.9, 0, 10.0) == TRACK and at(image, 4.1, 0, 10.0) == TRACK


def test_timeline_without_truth_has_one_lane_and_without_answer_no_orange():
    one_lane = draw_timeline(10.0, prediction=(2.0, 4.0))
    two_lanes = draw_timeline(10.0, prediction=(2.0, 4.0), truth=[(5.0, 8.0)])
    assert two_lanes.height - one_lane.height == lane_rows(1)[0] - lane_rows(0)[0]
    unanswered = draw_timeline(10.0, prediction=None, truth=[(5.0, 8.0)])
    colours = {c for _, c in unanswered.getcolors(maxcolors=100_000)}
    assert MODEL not in colours and TRUTH in colours
    assert at(unanswered, 1.0, 0, 10.0) == TRACK


def test_timeline_keeps_tiny_answers_visible_and_clips_long_ones():
    point = draw_timeline(10.0, prediction=(5.0, 5.0))
    x = round(timeline_x(5.0, 10.0, point.width)) + 1
    assert point.getpixel((x, lane_middle(0))) == MODEL
    past_end = draw_timeline(10.0, prediction=(8.0, 25.0))
    assert at(past_end, 9.9, 0, 10.0) == MODEL
    right_pad = past_end.getpixel((past_end.width - 5, lane_middle(0)))
    assert right_pad == PAPER
    after_video = draw_timeline(10.0, prediction=(12.0, 14.0))
    assert MODEL not in {c for _, c in after_video.getcolors(maxcolors=100_000)}


def test_timeline_rejects_zero_duration():
    with pytest.raises(ValueError, match="duration"):
        draw_timeline(0.0, prediction=(0.0, 1.0))


@pytest.mark.parametrize("duration, step", [(4, 0.5), (8, 1), (60, 10), (3600, 600)])
def test_tick_step_gives_at_most_ten_round_ticks(duration, step):
    assert tick_step(duration) == step


def test_boxes_drawn_in_source_pixels_with_separate_x_and_y_scales():
    frame = np.zeros((50, 100, 3), dtype=np.uint8)  # resized frame, half the source width
    image = draw_boxes(frame, [LabeledBox((100, 20, 300, 80), MODEL, "")], (400, 100), height=100)
    assert image.size == (200, 100)  # sx = 200 / 400 = 0.5, sy = 100 / 100 = 1
    # box -> x 50..149, y 20..79 (x2, y2 exclusive)
    assert image.getpixel((50, 50)) == MODEL  # left edge
    assert image.getpixel((149, 50)) == MODEL  # right edge
    assert image.getpixel((100, 20)) == MODEL  # top edge
    assert image.getpixel((100, 79)) == MODEL  # bottom edge
    assert image.getpixel((100, 50)) == (0, 0, 0)  # outline only
    assert image.getpixel((170, 50)) == (0, 0, 0)
    assert image.getpixel((100, 90)) == (0, 0, 0)


def test_model_and_truth_boxes_keep_their_colours():
    frame = np.full((64, 64, 3), 20, dtype=np.uint8)
    boxes = [LabeledBox((4, 30, 20, 60), TRUTH, ""), LabeledBox((40, 30, 60, 60), MODEL, "")]
    image = draw_boxes(frame, boxes, (64, 64), height=64)
    assert image.getpixel((4, 45)) == TRUTH
    assert image.getpixel((40, 45)) == MODEL
    assert image.getpixel((30, 45)) == (20, 20, 20)


def test_frame_strip_places_tiles_side_by_side_under_the_title():
    red = Image.new("RGB", (10, 20), (255, 0, 0))
    blue = Image.new("RGB", (30, 20), (0, 0, 255))
    strip = frame_strip([red, blue], ["0 s", "1 s"], title="frames")
    assert strip.width == 10 + TILE_GAP + 30
    assert strip.getpixel((5, TITLE_HEIGHT + 10)) == (255, 0, 0)
    assert strip.getpixel((10 + TILE_GAP + 15, TITLE_HEIGHT + 10)) == (0, 0, 255)
    assert strip.getpixel((10 + TILE_GAP // 2, TITLE_HEIGHT + 10)) == PAPER
    untitled = frame_strip([red], ["0 s"])
    assert untitled.getpixel((5, 1)) == (255, 0, 0)


def test_options_mark_the_chosen_and_the_correct_letter():
    page = options_html(["red", "<b>blue</b>", "green"], chosen="B", correct="C")
    rows = page.split('<div class="option')[1:]
    assert 'data-letter="A"' in rows[0] and "chosen" not in rows[0].split(">")[0]
    assert rows[1].startswith(' chosen"') and "&lt;b&gt;blue&lt;/b&gt;" in rows[1]
    assert rows[2].startswith(' correct"')
    both = options_html(["red", "blue"], chosen="A", correct="A")
    assert 'class="option chosen correct"' in both
