"""Frame-sampling arithmetic: which source frames to decode and at what size
(docs/methods.md#video-contract).

Pure functions, no I/O. The definitions, used everywhere in videorl:

- A clip `[start, end)` in seconds covers the source frames `first .. stop-1` with
  `first = ceil(start * src_fps)` and `stop = min(N, ceil(end * src_fps))`, i.e. the frames
  whose presentation time `i / src_fps` lies in `[start, end)`. Its duration is
  `D = (stop - first) / src_fps` (the whole video, `N / src_fps`, when not clipped).
- The frame count is `n = even_floor(min(clamp(D * fps, min_frames, max_frames), N_clip))`,
  at least 2, with `min_frames` rounded up and `max_frames` rounded down to even (the
  temporal patch of the Qwen vision encoders is 2 frames).
- Frames are taken at a uniform stride of `N_clip / n` source frames:
  `index_k = first + floor(k * N_clip / n)`, k = 0..n-1.
- The *actual* sampled fps is `n / D`. Frame k is shown at
  `timestamp_k = index_k / src_fps - clip_start`, which equals `k / actual_fps` up to less
  than one source frame (`1 / src_fps`), so the positions the model derives from the
  actual fps (Qwen2.5-VL `second_per_grid_ts = 2 / actual_fps`) and the timestamps
  (Qwen3-VL text) agree. This is also how transformers' `VideoMetadata.sampled_fps`
  defines it for a whole video.
"""

from __future__ import annotations

import math

from videorl.errors import DataError, MediaError

TEMPORAL_PATCH = 2
_EPS = 1e-9  # absorbs float error in `seconds * fps` products before ceil/floor
MAX_ASPECT_RATIO = 200


def _even_floor(x: float) -> int:
    return math.floor(x / TEMPORAL_PATCH + _EPS) * TEMPORAL_PATCH


def _even_ceil(x: float) -> int:
    return math.ceil(x / TEMPORAL_PATCH - _EPS) * TEMPORAL_PATCH


def clip_bounds(
    num_source_frames: int,
    source_fps: float,
    start: float | None = None,
    end: float | None = None,
) -> tuple[int, int]:
    """Source frames `[first, stop)` of the clip `[start, end)` seconds (see module doc).

    `start` below 0 and `end` past the video are clamped; a clip with no frame is a data
    error that names the numbers to check.
    """
    if num_source_frames < 1 or not source_fps > 0:
        raise DataError(
            f"video has {num_source_frames} frames at {source_fps} fps; "
            "need at least one frame and a positive frame rate"
        )
    first = 0 if start is None else max(0, math.ceil(start * source_fps - _EPS))
    stop = (
        num_source_frames
        if end is None
        else min(num_source_frames, math.ceil(end * source_fps - _EPS))
    )
    if stop <= first:
        raise DataError(
            f"clip [{start}, {end}] s holds no frame of a {num_source_frames / source_fps:.3f} s "
            f"video ({num_source_frames} frames at {source_fps:g} fps); fix the record's clip "
            "start/end so they lie inside the video"
        )
    return first, stop


def num_sampled_frames(
    clip_frames: int, clip_duration: float, *, fps: float, min_frames: int, max_frames: int
) -> int:
    """`n = even_floor(min(clamp(D * fps, even_ceil(min_frames), even_floor(max_frames)),
    N_clip))`, at least 2 (frames repeat when the clip has a single frame)."""
    lo, hi = _even_ceil(min_frames), _even_floor(max_frames)
    wanted = min(max(clip_duration * fps, lo), hi)
    return max(TEMPORAL_PATCH, _even_floor(min(wanted, clip_frames)))


def plan_frame_indices(
    num_source_frames: int,
    source_fps: float,
    *,
    fps: float = 2.0,
    min_frames: int = 4,
    max_frames: int = 64,
    start: float | None = None,
    end: float | None = None,
) -> tuple[list[int], float]:
    """Source frame indices to decode and the actual sampled fps `n / D` (see module doc).

    Example: a 10 s video at 8 fps (80 frames), fps=2 -> n = 20, stride 4,
    indices [0, 4, ..., 76], actual fps 2.0; with max_frames=8 -> stride 10, actual fps 0.8.
    """
    if not fps > 0:
        raise DataError(f"sampling fps must be positive, got {fps}")
    first, stop = clip_bounds(num_source_frames, source_fps, start, end)
    clip_frames = stop - first
    duration = clip_frames / source_fps
    n = num_sampled_frames(
        clip_frames, duration, fps=fps, min_frames=min_frames, max_frames=max_frames
    )
    indices = [first + (k * clip_frames) // n for k in range(n)]
    return indices, n / duration


def frame_timestamps(
    indices: list[int] | tuple[int, ...], source_fps: float, clip_start: float = 0.0
) -> tuple[float, ...]:
    """Presentation time of each sampled frame relative to the clip start:
    `index / src_fps - clip_start` seconds."""
    return tuple(i / source_fps - clip_start for i in indices)


def fit_resolution(
    height: int, width: int, *, min_pixels: int, max_pixels: int, factor: int = 28
) -> tuple[int, int]:
    """Qwen's `smart_resize`: both sides multiples of `factor`, `h * w` within
    `[min_pixels, max_pixels]`, aspect ratio kept as closely as possible.

    `h, w = round(h / f) * f, round(w / f) * f`; if `h * w > max_pixels` scale both by
    `beta = sqrt(H * W / max_pixels)` and floor to `f` (at least `f`); if below
    `min_pixels` scale by `sqrt(min_pixels / (H * W))` and ceil to `f`. Matches
    `transformers.models.qwen2_vl.image_processing_qwen2_vl.smart_resize`, so the processor
    leaves frames of this size unchanged.
    """
    if height < 1 or width < 1:
        raise MediaError(f"frame size {width}x{height} is empty; the file has no picture")
    if max(height, width) / min(height, width) > MAX_ASPECT_RATIO:
        raise MediaError(
            f"frame size {width}x{height} has an aspect ratio above {MAX_ASPECT_RATIO}; "
            "crop or pad the media before training"
        )
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def frame_pixel_cap(num_frames: int, *, min_pixels: int, max_pixels: int, total_pixels: int) -> int:
    """Per-frame pixel cap under a whole-video budget, as qwen-vl-utils computes it:
    `max(min(max_pixels, total_pixels / n * 2), 1.05 * min_pixels)` (the budget counts
    frame pairs, one temporal patch each)."""
    budget = total_pixels / max(num_frames, 1) * TEMPORAL_PATCH
    return int(max(min(max_pixels, budget), min_pixels * 1.05))
