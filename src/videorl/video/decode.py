"""Decode a video (or load an image) into model-ready frames plus `VideoMeta`
(docs/methods.md#video-contract).

`decode_video` samples frames by target fps within `[min_frames, max_frames]` (even count),
optionally from a clip `[start, end)`, and resizes them the way the Qwen processors expect:
each frame to `fit_resolution(h, w, min_pixels, cap)` with the per-frame cap
`frame_pixel_cap(n, ...)` from the whole-video `total_pixels` budget, each frame as it is
decoded (so decoding holds `n` frames at that size, whatever the video's length or resolution:
docs/long_videos.md). Frames come back as a uint8 tensor `T x C x H x W`; every failure is a
`MediaError` naming the file and the fix.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import torch
from torchvision.transforms import InterpolationMode
from torchvision.transforms.v2 import functional as tvf

from videorl.config.constraints import Checked, Constraint, Ge, OneOf, Range
from videorl.errors import ConfigError, DataError, MediaError, fix
from videorl.video.backends import (
    READERS,
    Backend,
    SourceInfo,
    as_chw,
    backend_available,
)
from videorl.video.meta import TimeEncoding, VideoMeta
from videorl.video.sampling import (
    clip_bounds,
    fit_resolution,
    frame_pixel_cap,
    frame_timestamps,
    plan_frame_indices,
)

IMAGE_EXTENSIONS = frozenset({".jpg", ".jpeg", ".png", ".bmp", ".webp", ".gif", ".tif", ".tiff"})
_REENCODE = "ffmpeg -i IN -c:v libx264 -pix_fmt yuv420p OUT.mp4"


@dataclass(frozen=True)
class VideoConfig(Checked, section="video"):
    """How videos are decoded, sampled, resized and cached.

    Pixel defaults are those of the Qwen2.5-VL video processor (factor 28 = patch 14 x
    merge 2; use factor=32 for Qwen3-VL); `total_pixels` is qwen-vl-utils' budget for the
    whole video. Tiny CPU runs lower `min_pixels` so small videos are not upscaled.
    `cache_bytes` bounds the in-memory decode cache; `cache_dir` adds an on-disk store.

    `time_encoding` is what the model is told about *when* the frames were taken:

    - `sampled` (the default): the actual sampled fps and the frames' true timestamps
      (docs/methods.md#video-contract). Qwen2.5-VL gets `second_per_grid_ts = temporal_patch /
      sampled_fps` (16 frames over 20 s: 2 / 0.8 = 2.5 s per temporal grid), so its mRoPE
      temporal ids advance `second_per_grid_ts * tokens_per_second` per grid; Qwen3-VL writes
      the frames' real times into the text (`<1.2 seconds>` ...).
    - `processor_default`: no timing reaches the processor, as in Video-R1 (SFT and RL call
      the processor without `fps`). The Qwen2.5-VL processor of the transformers Video-R1
      trained with then assumed 2 fps (`fps = videos_kwargs.pop("fps", 2.0)`), so every
      temporal grid of 2 frames counts as 1.0 s whatever the real sampling; we pin that value
      (`PROCESSOR_DEFAULT_FPS`), not the installed transformers' default (5.x assumes 24 fps
      when it gets no metadata). Qwen3-VL then writes frame i at `i / 2` seconds. Use it for a
      checkpoint trained that way (Video-R1's SFT); it discards the real time scale.
    """

    backend: Backend = "pyav"
    """Video decoder: pyav, torchcodec or decord (the latter two must be installed)."""
    fps: Annotated[float, Range(gt=0, shown="a positive number of frames per second")] = 2.0
    """Frames sampled per second of video, within min_frames..max_frames."""
    min_frames: Annotated[int, Ge(1)] = 4
    """Fewest frames sampled from a video."""
    max_frames: Annotated[int, Ge(2)] = 64
    """Most frames sampled from a video (>= 2 and >= min_frames)."""
    min_pixels: Annotated[int, Ge(1)] = 128 * 28 * 28
    """Smallest frame area in pixels after resizing; smaller frames are upscaled."""
    max_pixels: int = 768 * 28 * 28
    """Largest frame area in pixels after resizing (>= min_pixels)."""
    image_max_pixels: int | None = None
    """Largest image (one-frame media) area in pixels after resizing, apart from video frames; null
    = max_pixels. OraRL: 1048576 (its frames: 786432)."""
    image_min_pixels: Annotated[int | None, Ge(1)] = None
    """Smallest image area in pixels after resizing; null = min_pixels. Video-R1: 3136."""
    total_pixels: Annotated[int, Ge(1)] = int(128000 * 28 * 28 * 0.9)
    """Pixel budget of the whole video (frames x area); frames shrink to fit."""
    factor: Annotated[int, Ge(1)] = 28
    """Frame sides are rounded to multiples of this (patch x merge: 28 Qwen2.5-VL, 32 Qwen3-VL)."""
    cache_bytes: Annotated[int, Ge(0)] = 4 * 1024**3
    """Size of the in-memory decoded-video cache in bytes; 0 = off."""
    cache_dir: str | None = None
    """Folder of an on-disk decoded-video cache; null = none."""
    tool_max_frames: Annotated[int, Ge(2)] = 16
    """Most frames one video-tool call (get_clip) returns (even); a longer window is
    sampled more sparsely. Raise it to show clips at the prompt's frame rate."""
    time_encoding: TimeEncoding = "sampled"
    """What the model is told about frame times: sampled (true fps and timestamps) or
    processor_default (Video-R1's fixed 2 fps); details above."""

    @classmethod
    def refusal(cls, key: str, value: Any, constraint: Constraint) -> str:
        """`video.fps=0 is invalid: ...`, the key as the running command spells it."""
        if isinstance(constraint, OneOf):
            return f"{fix(key)}={value!r} is invalid: choose one of {', '.join(constraint.choices)}"
        return f"{fix(key)}={value!r} is invalid: must be {constraint.rule()}"

    def __post_init__(self) -> None:
        super().__post_init__()

        def bad(key: str, remedy: str) -> ConfigError:  # the key as the command takes it
            return ConfigError(f"{fix(f'video.{key}')}={getattr(self, key)!r} is invalid: {remedy}")

        if not backend_available(self.backend):
            raise bad("backend", f"{self.backend} is not installed; install it or use 'pyav'")
        if self.max_frames < self.min_frames:
            raise bad("max_frames", f"must be >= 2 and >= min_frames={self.min_frames}")
        if self.tool_max_frames % 2:
            raise bad("tool_max_frames", "must be an even number >= 2")
        if self.max_pixels < self.min_pixels:
            raise bad("max_pixels", f"must be >= min_pixels={self.min_pixels} >= 1")
        low, high = self.image_pixel_bounds()
        if self.image_max_pixels is not None and high < low:
            raise bad("image_max_pixels", f"must be >= the image minimum {low} (null: max_pixels)")
        if self.image_min_pixels is not None and high < low:
            raise bad("image_min_pixels", f"must be <= the image maximum {high}")

    def image_pixel_bounds(self) -> tuple[int, int]:
        """(min, max) area of an image after resizing: `image_min_pixels` /
        `image_max_pixels`, each defaulting to the video frames' bound."""
        low = self.min_pixels if self.image_min_pixels is None else self.image_min_pixels
        high = self.max_pixels if self.image_max_pixels is None else self.image_max_pixels
        return low, high

    def sampling_key(self) -> tuple[Any, ...]:
        """The fields that change decoded frames (the cache key part from the config)."""
        skip = {"cache_bytes", "cache_dir"}
        return tuple((k, v) for k, v in asdict(self).items() if k not in skip)


@dataclass(frozen=True)
class DecodedVideo:
    """Frames (uint8 `T x C x H x W`, RGB) and their metadata."""

    frames: torch.Tensor
    meta: VideoMeta

    @property
    def nbytes(self) -> int:
        return self.frames.numel() * self.frames.element_size()


def resize_frames(frames: torch.Tensor, height: int, width: int) -> torch.Tensor:
    """Bicubic, antialiased resize of uint8 `T x C x H x W` frames (what the Qwen processors
    use); a no-op when the size already matches."""
    if frames.shape[-2:] == (height, width):
        return frames
    return tvf.resize(
        frames, [height, width], interpolation=InterpolationMode.BICUBIC, antialias=True
    )


def _check_file(path: str, kind: str) -> None:
    if not os.path.exists(path):
        raise MediaError(
            f"{kind} file not found: {path}; fix the record's path or "
            f"{fix('set data.video_root')} to the folder that holds the media"
        )
    if os.path.getsize(path) == 0:
        raise MediaError(
            f"{kind} file is empty (0 bytes): {path}; re-download or re-encode it, or drop "
            "the record"
        )


def _frame_size(src_h: int, src_w: int, num_frames: int, config: VideoConfig) -> tuple[int, int]:
    """`fit_resolution(h, w, min_pixels, frame_pixel_cap(n, ...))`: the size each of a video's
    `n` sampled frames is resized to (module docstring)."""
    cap = frame_pixel_cap(
        num_frames,
        min_pixels=config.min_pixels,
        max_pixels=config.max_pixels,
        total_pixels=config.total_pixels,
    )
    return fit_resolution(
        src_h, src_w, min_pixels=config.min_pixels, max_pixels=cap, factor=config.factor
    )


class _FitFrames:
    """The `convert` handed to a reader: resizes each frame as it is decoded, so decoding holds
    the sampled frames at the model's resolution, never at the file's (docs/long_videos.md).
    The size is fixed at the first frame, from its size and the plan's frame count."""

    def __init__(self, config: VideoConfig, planned: dict[str, Any]) -> None:
        self.config, self.planned = config, planned
        self.source: tuple[int, int] | None = None
        self.size: tuple[int, int] = (0, 0)

    def __call__(self, frame: np.ndarray) -> torch.Tensor:
        if self.source is None:
            src_h, src_w = int(frame.shape[0]), int(frame.shape[1])
            self.size = _frame_size(src_h, src_w, len(self.planned["indices"]), self.config)
            self.source = (src_h, src_w)
        return resize_frames(as_chw(frame)[None], *self.size)[0]


def _meta(
    info: SourceInfo,
    planned: dict[str, Any],
    config: VideoConfig,
    start: float | None,
    end: float | None,
    source: tuple[int, int],
    size: tuple[int, int],
) -> VideoMeta:
    """The meta of the `planned` frames (as `_planner` records them) of a clip."""
    first, stop = clip_bounds(info.num_frames, info.fps, start, end)
    clip_start = max(0.0, start or 0.0)
    indices = planned["indices"]
    return VideoMeta(
        source_fps=info.fps,
        duration=(stop - first) / info.fps,
        frame_indices=tuple(indices),
        timestamps=frame_timestamps(indices, info.fps, clip_start),
        fps=planned["fps"],
        clip_start=clip_start,
        width=size[1],
        height=size[0],
        source_width=source[1],
        source_height=source[0],
        time_encoding=config.time_encoding,
    )


def _planner(
    config: VideoConfig, start: float | None, end: float | None, out: dict[str, Any]
) -> Callable[[SourceInfo], list[int]]:
    """The plan callback handed to a backend; records the plan and actual fps in `out`."""

    def plan(info: SourceInfo) -> list[int]:
        indices, actual_fps = plan_frame_indices(
            info.num_frames,
            info.fps,
            fps=config.fps,
            min_frames=config.min_frames,
            max_frames=config.max_frames,
            start=start,
            end=end,
        )
        out["indices"], out["fps"] = indices, actual_fps
        return indices

    return plan


def decode_video(
    path: str | os.PathLike,
    config: VideoConfig,
    start: float | None = None,
    end: float | None = None,
) -> DecodedVideo:
    """Decode the planned frames of `path` (clip `[start, end)` seconds when given)."""
    path = str(path)
    _check_file(path, "video")
    planned: dict[str, Any] = {}
    fit = _FitFrames(config, planned)
    try:
        info, frames = READERS[config.backend](path, _planner(config, start, end, planned), fit)
    except (DataError, MediaError) as err:  # the clip does not fit the video; a bad aspect
        raise MediaError(f"{path}: {err}") from err
    except Exception as err:  # any decoder failure is a bad sample, reported with its file
        raise MediaError(
            f"cannot decode video {path} ({type(err).__name__}: {err}); the file is corrupt or "
            f"not a video; re-encode it ({_REENCODE}) or drop the record"
        ) from err
    assert fit.source is not None  # a reader returns at least one frame or raises
    meta = _meta(info, planned, config, start, end, fit.source, fit.size)
    return DecodedVideo(frames=frames, meta=meta)


def frames_at(
    source: str | np.ndarray | torch.Tensor,
    indices: Sequence[int],
    height: int,
    width: int,
    backend: Backend = "pyav",
) -> torch.Tensor:
    """The source frames `indices` (clamped to the source) of a video file or of inline frames
    (`T x H x W x 3` uint8), resized to `height x width` as decoded clips are: uint8
    `T x C x H x W`. Video controls use it to show a clip's frames from other times."""
    if isinstance(source, str):
        _check_file(source, "video")

        def plan(info: SourceInfo) -> list[int]:
            return [min(max(i, 0), info.num_frames - 1) for i in indices]

        def fit(frame: np.ndarray) -> torch.Tensor:  # resized as decoded, as decode_video
            return resize_frames(as_chw(frame)[None], height, width)[0]

        try:
            return READERS[backend](source, plan, fit)[1]
        except Exception as err:  # as in decode_video: a bad sample, reported with its file
            raise MediaError(f"cannot decode video {source} ({type(err).__name__}: {err})") from err
    array = np.asarray(source)
    raw = array[[min(max(i, 0), array.shape[0] - 1) for i in indices]]
    frames = torch.from_numpy(np.ascontiguousarray(raw)).permute(0, 3, 1, 2)
    return resize_frames(frames, height, width).contiguous()


def frames_from_array(
    frames: Any,
    fps: float | None,
    config: VideoConfig,
    start: float | None = None,
    end: float | None = None,
) -> DecodedVideo:
    """Sample and resize inline frames (`T x H x W x 3` uint8 array or tensor) exactly like a
    decoded file; a single frame without fps is treated as an image."""
    array = np.asarray(frames)
    if array.ndim != 4 or array.shape[-1] != 3 or array.dtype != np.uint8:
        raise MediaError(
            f"inline frames must be a uint8 array T x H x W x 3, got {array.dtype} {array.shape}"
        )
    if fps is None:
        if array.shape[0] != 1:
            raise MediaError(
                f"inline video of {array.shape[0]} frames has no fps; set MediaRef.fps"
            )
        return _image_from_array(array[0], config)
    info = SourceInfo(num_frames=int(array.shape[0]), fps=float(fps))
    planned: dict[str, Any] = {}
    try:
        indices = _planner(config, start, end, planned)(info)
    except DataError as err:
        raise MediaError(f"inline frames: {err}") from err
    sampled = torch.from_numpy(np.ascontiguousarray(array[indices])).permute(0, 3, 1, 2)
    src = (int(sampled.shape[2]), int(sampled.shape[3]))
    size = _frame_size(*src, len(indices), config)
    meta = _meta(info, planned, config, start, end, src, size)
    return DecodedVideo(frames=resize_frames(sampled, *size).contiguous(), meta=meta)


def _image_from_array(array: np.ndarray, config: VideoConfig) -> DecodedVideo:
    src_h, src_w = int(array.shape[0]), int(array.shape[1])
    min_pixels, max_pixels = config.image_pixel_bounds()
    height, width = fit_resolution(
        src_h, src_w, min_pixels=min_pixels, max_pixels=max_pixels, factor=config.factor
    )
    frames = torch.from_numpy(np.array(array)).permute(2, 0, 1)[None]  # a writable copy
    meta = VideoMeta.still(width, height, source_width=src_w, source_height=src_h)
    return DecodedVideo(frames=resize_frames(frames, height, width).contiguous(), meta=meta)


def load_image(path: str | os.PathLike, config: VideoConfig) -> DecodedVideo:
    """Load an image as a one-frame `DecodedVideo` (T = 1, `meta.is_image`), resized to
    `fit_resolution(h, w, *config.image_pixel_bounds())`."""
    from PIL import Image, UnidentifiedImageError

    path = str(path)
    _check_file(path, "image")
    try:
        with Image.open(path) as image:
            array = np.asarray(image.convert("RGB"))
    except (UnidentifiedImageError, OSError, ValueError) as err:
        raise MediaError(
            f"cannot read image {path} ({type(err).__name__}: {err}); the file is corrupt or "
            "not an image; re-save it as PNG or JPEG, or drop the record"
        ) from err
    try:
        return _image_from_array(array, config)
    except MediaError as err:
        raise MediaError(f"{path}: {err}") from err


def is_image_path(path: str | os.PathLike) -> bool:
    return Path(path).suffix.lower() in IMAGE_EXTENSIONS
