"""Frame-sampling arithmetic (videorl.video.sampling)."""

from __future__ import annotations

import itertools
import math

import pytest
from transformers.models.qwen2_vl.image_processing_qwen2_vl import smart_resize

from videorl.errors import DataError, MediaError
from videorl.video.sampling import (
    clip_bounds,
    fit_resolution,
    frame_pixel_cap,
    frame_timestamps,
    plan_frame_indices,
)


def test_target_fps_on_a_whole_video():
    indices, fps = plan_frame_indices(80, 8.0, fps=2.0, min_frames=4, max_frames=64)
    assert indices == list(range(0, 80, 4))
    assert fps == 2.0


def test_max_frames_cap_lowers_the_actual_fps():
    indices, fps = plan_frame_indices(80, 8.0, fps=2.0, max_frames=8)
    assert indices == [0, 10, 20, 30, 40, 50, 60, 70]
    assert fps == pytest.approx(0.8)  # 8 frames over 10 s, not the requested 2


def test_min_frames_raises_the_actual_fps():
    indices, fps = plan_frame_indices(8, 8.0, fps=2.0, min_frames=4)  # a 1 s video
    assert indices == [0, 2, 4, 6]
    assert fps == 4.0


def test_counts_are_even_and_odd_limits_round_inwards():
    indices, _ = plan_frame_indices(35, 10.0, fps=2.0)  # 3.5 s -> 7 wanted
    assert len(indices) == 6
    assert len(plan_frame_indices(80, 8.0, fps=0.1, min_frames=5)[0]) == 6
    assert len(plan_frame_indices(80, 8.0, fps=2.0, max_frames=9)[0]) == 8


def test_clip_arithmetic():
    assert clip_bounds(80, 8.0, 3.0, 7.5) == (24, 60)
    indices, fps = plan_frame_indices(80, 8.0, fps=2.0, start=3.0, end=7.5)
    assert indices == [24, 28, 33, 37, 42, 46, 51, 55]  # stride 36 / 8 = 4.5 frames
    assert fps == pytest.approx(8 / 4.5)
    assert frame_timestamps(indices, 8.0, 3.0)[:3] == (0.0, 0.5, 1.125)


def test_clip_is_clamped_to_the_video_and_empty_clips_fail():
    assert clip_bounds(80, 8.0, -2.0, 99.0) == (0, 80)
    assert clip_bounds(80, 8.0, 1.05, None) == (9, 80)  # first frame at or after 1.05 s
    with pytest.raises(DataError, match="holds no frame"):
        clip_bounds(80, 8.0, 11.0, 12.0)


def test_single_frame_clip_repeats_the_frame():
    indices, fps = plan_frame_indices(1, 25.0, fps=2.0)
    assert indices == [0, 0]
    assert fps == 50.0


def test_plan_invariants_over_a_grid_of_videos_and_settings():
    grid = itertools.product(
        [1, 7, 30, 81, 600],
        [8.0, 29.97],
        [0.5, 2.0, 3.0],
        [1, 4],
        [2, 16, 64],
        [None, 0.4],
        [None, 5.3],
    )
    for frames, src_fps, fps, lo, hi, start, end in grid:
        try:
            first, stop = clip_bounds(frames, src_fps, start, end)
        except DataError:
            continue  # the clip misses this short video; covered above
        indices, actual = plan_frame_indices(
            frames, src_fps, fps=fps, min_frames=lo, max_frames=hi, start=start, end=end
        )
        n, duration = len(indices), (stop - first) / src_fps
        assert n % 2 == 0 and 2 <= n <= max(2, hi)
        assert indices == sorted(indices) and first <= indices[0] and indices[-1] < stop
        if stop - first >= 2:
            assert len(set(indices)) == n  # no repeats unless the clip has one frame
        assert actual == pytest.approx(n / duration)
        # timestamps agree with k / actual_fps to within one source frame
        clip_start = max(0.0, start or 0.0)
        offset = first / src_fps - clip_start
        for k, t in enumerate(frame_timestamps(indices, src_fps, clip_start)):
            assert abs(t - offset - k / actual) < 1 / src_fps + 1e-9


@pytest.mark.parametrize(
    "height,width", [(64, 64), (64, 96), (480, 640), (1080, 1920), (30, 900), (17, 13)]
)
@pytest.mark.parametrize("factor", [28, 32])
def test_fit_resolution_matches_qwen_smart_resize(height, width, factor):
    lo, hi = 16 * factor * factor, 256 * factor * factor
    h, w = fit_resolution(height, width, min_pixels=lo, max_pixels=hi, factor=factor)
    assert (h, w) == smart_resize(height, width, factor=factor, min_pixels=lo, max_pixels=hi)
    assert h % factor == 0 and w % factor == 0
    assert lo <= h * w <= hi


def test_fit_resolution_refuses_extreme_aspect_ratios():
    with pytest.raises(MediaError, match="aspect ratio"):
        fit_resolution(2, 1000, min_pixels=4, max_pixels=10**6)


def test_frame_pixel_cap_shares_the_total_budget():
    # 20 frames of a 1,000,000 pixel budget: 100,000 per frame pair -> 100,000 per frame
    assert frame_pixel_cap(20, min_pixels=1000, max_pixels=10**6, total_pixels=10**6) == 100_000
    assert frame_pixel_cap(2, min_pixels=1000, max_pixels=5000, total_pixels=10**6) == 5000
    assert frame_pixel_cap(10**6, min_pixels=1000, max_pixels=5000, total_pixels=10) == math.floor(
        1050
    )
