"""The built-in video tools: `get_clip`, `get_frame` and `crop`.

They read the row's *original* media (`ToolContext.media`: the file, or inline frames), not
the prompt's sampled frames, so a clip at 8 fps over two seconds shows frames the prompt's
1 fps sampling skipped. Times are seconds of the original video (the prompt's clip start
included); a time outside the video is a `ToolError` for the model. Decoding reuses
`videorl.video.decode` (the same sampling, resizing and metadata as prompt videos), bounded
by `VideoToolLimits`, and is cached per step (`ToolDecodes`).

`crop` boxes are `[x1, y1, x2, y2]` in pixels of the frames the prompt showed
(`video.meta.width` x `height`, the frame Qwen2.5-VL grounds in).

Under a temporal video control (`ToolContext.control`: frozen, reversed, shuffled) the tools
read the controlled video, the same one the prompt's frames come from
(`ControlledTimeline`): a clip keeps its window's times and size, and each of its frames,
like a frame or a crop, is the source frame the control shows at that time.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from videorl.errors import MediaError
from videorl.rollout.tools.registry import ToolContext, ToolError, ToolResult, register_tool
from videorl.rollout.tools.schema import object_schema, seconds
from videorl.video.controls import TEMPORAL, ControlledTimeline, media_key
from videorl.video.decode import (
    DecodedVideo,
    VideoConfig,
    decode_video,
    frames_at,
    frames_from_array,
    is_image_path,
)
from videorl.video.media import MediaRef

if TYPE_CHECKING:
    import torch

_EPS = 1e-6
_NATIVE_PIXELS = 4096 * 4096


def video_span(ctx: ToolContext) -> tuple[float, float]:
    """Seconds `[start, end)` of the original video the tools may address."""
    media, video = ctx.media, ctx.video
    if media is None or video is None or video.meta.source_fps <= 0:
        raise ToolError("this sample has no video to take clips or frames from")
    if media.path is not None and is_image_path(media.path):
        raise ToolError("this sample is an image, not a video")
    start = video.meta.clip_start
    return start, start + video.meta.duration


def _check_time(ctx: ToolContext, time: float, name: str = "time") -> tuple[float, float]:
    lo, hi = video_span(ctx)
    if not lo - _EPS <= time < hi:
        raise ToolError(f"{name}={time:g} is outside the video; use a time in [{lo:g}, {hi:g}) s")
    return lo, hi


def _identity(media: MediaRef) -> object:
    """What names a row's media in the step's decode cache: its file, or its inline frames."""
    return media.path if media.frames is None else ("inline", id(media.frames))


def tool_config(ctx: ToolContext, **sampling: Any) -> VideoConfig:
    """`ctx.config` with a tool's own `sampling` fields and no video cache: a tool's decodes
    are kept for the step in `ctx.decodes` (see `_decode`), never in the cache."""
    return replace(ctx.config, **sampling, cache_bytes=0, cache_dir=None)


def _decode(ctx: ToolContext, start: float, end: float, config: VideoConfig) -> DecodedVideo:
    """The window `[start, end)` of the original media under `config`, once per step."""
    media = ctx.media
    assert media is not None
    key = (_identity(media), round(start, 6), round(end, 6), config.sampling_key())

    def run() -> DecodedVideo:
        try:
            if media.frames is not None:
                return frames_from_array(media.frames, media.fps, config, start, end)
            assert media.path is not None
            return decode_video(media.path, config, start, end)
        except MediaError as err:
            raise ToolError(f"cannot read that part of the video: {err}") from err

    return ctx.decodes.get(key, run)


def _native_frame(ctx: ToolContext, time: float) -> DecodedVideo:
    """The source frame at `time` (about its native size): one `T = 1` uint8 frame."""
    lo, hi = _check_time(ctx, time)
    assert ctx.video is not None
    step = 2.0 / ctx.video.meta.source_fps
    config = tool_config(
        ctx,
        fps=1e6,
        min_frames=2,
        max_frames=2,
        max_pixels=max(ctx.config.max_pixels, _NATIVE_PIXELS),
        total_pixels=2 * _NATIVE_PIXELS,
    )
    if (timeline := _timeline(ctx)) is not None:  # the frame the control shows at `time`
        fps = ctx.video.meta.source_fps
        time = timeline.source(round(time * fps)) / fps
    start = max(lo, min(time, hi - step))
    decoded = _decode(ctx, start, min(hi, start + step), config)
    return DecodedVideo(frames=decoded.frames[:1], meta=decoded.meta)


def _timeline(ctx: ToolContext) -> ControlledTimeline | None:
    """The temporal control the tools read the video under, if any."""
    if ctx.control not in TEMPORAL or ctx.video is None or ctx.media is None:
        return None
    return ControlledTimeline.of(ctx.control, ctx.video, media_key(ctx.media))


def _controlled_clip(ctx: ToolContext, clip: DecodedVideo) -> DecodedVideo:
    """`clip` as the controlled video shows it: the same times, size and metadata, each frame
    the source frame the control puts there (decoded once per step)."""
    timeline, media = _timeline(ctx), ctx.media
    if timeline is None or media is None:
        return clip
    indices = tuple(timeline.source(i) for i in clip.meta.frame_indices)
    source = media.path if media.frames is None else media.frames
    assert source is not None
    size = (clip.meta.height, clip.meta.width)
    key = (_identity(media), "control", timeline.control, indices, size)

    def run() -> DecodedVideo:
        try:
            frames = frames_at(source, indices, *size, backend=ctx.config.backend)
        except MediaError as err:
            raise ToolError(f"cannot read that part of the video: {err}") from err
        return DecodedVideo(frames=frames, meta=clip.meta)

    return ctx.decodes.get(key, run)


def _as_image(frame_chw: torch.Tensor, ctx: ToolContext) -> DecodedVideo:
    """A `C x H x W` frame as an image under the run's image pixel bounds."""
    return frames_from_array(frame_chw.permute(1, 2, 0)[None].numpy(), None, ctx.config)


@register_tool(
    description=(
        "Re-watch a part of the video at a higher frame rate. Returns the frames of "
        "[start, end) seconds sampled at `fps` frames per second (bounded)."
    ),
    parameters=object_schema(
        {
            "start": seconds("start time in seconds"),
            "end": seconds("end time in seconds"),
            "fps": {
                "type": "number",
                "minimum": 0.1,
                "default": 2.0,
                "description": "frames per second to sample",
            },
        },
        "start",
        "end",
    ),
    timeout_s=30.0,
)
def get_clip(ctx: ToolContext, start: float, end: float, fps: float = 2.0) -> ToolResult:
    _, hi = _check_time(ctx, start, "start")
    if not end > start:
        raise ToolError(f"end={end:g} must be greater than start={start:g}")
    limits = ctx.limits
    if fps > limits.max_fps:
        raise ToolError(f"fps={fps:g} is above the limit {limits.max_fps:g}; ask for less")
    config = tool_config(
        ctx,
        fps=float(fps),
        min_frames=2,
        max_frames=limits.max_frames,
        total_pixels=min(ctx.config.total_pixels, limits.total_pixels),
    )
    clip = _controlled_clip(ctx, _decode(ctx, start, min(end, hi), config))
    times = ", ".join(f"{clip.meta.clip_start + t:.2f}" for t in clip.meta.timestamps)
    text = (
        f"Clip of {start:g}-{min(end, hi):g} s: {len(clip.meta.timestamps)} frames at "
        f"{clip.meta.fps:.2f} fps (times in seconds: {times})."
    )
    return ToolResult(text=text, media=(clip,), under_control=ctx.control in TEMPORAL)


@register_tool(
    description="Look at one frame of the video at `time` seconds, at full resolution.",
    parameters=object_schema(
        {"time": seconds("seconds")},
        "time",
    ),
    timeout_s=20.0,
)
def get_frame(ctx: ToolContext, time: float) -> ToolResult:
    frame = _native_frame(ctx, time)
    image = _as_image(frame.frames[0], ctx)
    return ToolResult(f"Frame at {time:g} s.", (image,), under_control=ctx.control in TEMPORAL)


@register_tool(
    description=(
        "Zoom into a region of the frame at `time` seconds. `box` is [x1, y1, x2, y2] in "
        "pixels of the frames you were shown."
    ),
    parameters=object_schema(
        {
            "time": seconds("seconds"),
            "box": {
                "type": "array",
                "items": {"type": "number"},
                "minItems": 4,
                "maxItems": 4,
                "description": "[x1, y1, x2, y2]",
            },
        },
        "time",
        "box",
    ),
    timeout_s=20.0,
)
def crop(ctx: ToolContext, time: float, box: list[float]) -> ToolResult:
    frame = _native_frame(ctx, time)
    assert ctx.video is not None
    shown_w, shown_h = ctx.video.meta.width, ctx.video.meta.height
    x1, y1, x2, y2 = (float(v) for v in box)
    if not (0 <= x1 < x2 <= shown_w and 0 <= y1 < y2 <= shown_h):
        raise ToolError(
            f"box={list(box)} must satisfy 0 <= x1 < x2 <= {shown_w} and 0 <= y1 < y2 <= {shown_h}"
        )
    height, width = int(frame.frames.shape[-2]), int(frame.frames.shape[-1])
    sx, sy = width / shown_w, height / shown_h
    left, top = int(x1 * sx), int(y1 * sy)
    right, bottom = max(left + 1, round(x2 * sx)), max(top + 1, round(y2 * sy))
    region = frame.frames[0, :, top:bottom, left:right]
    return ToolResult(
        text=f"Region {[round(v, 1) for v in (x1, y1, x2, y2)]} of the frame at {time:g} s.",
        media=(_as_image(region, ctx),),
        under_control=ctx.control in TEMPORAL,
    )
