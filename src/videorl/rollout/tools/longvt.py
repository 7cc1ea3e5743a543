"""LongVT's `crop_video` tool, for `configs/longvt.yaml`
(docs/fidelity.md#longvt-configslongvtyaml).

Import this module through `rollout.tool_modules: [videorl.rollout.tools.longvt]`; it
registers `crop_video(start_time, end_time)`, the tool LongVT trains with
(EvolvingLMMs-Lab/LongVT, `examples/video_tools/mcp_server.py`, selected by
`examples/video_tools/config/mcp_tool_config.yaml`). Its behaviour, as published:

- the window `[start_time, end_time)` seconds of the row's video, resampled at a fixed
  1 fps (the model does not choose the rate, unlike `get_clip`), 2..128 frames, each frame
  between 28 x 28 and 224 x 224 pixels;
- the frames come back as separate *images*, each followed by the processor like any image,
  with a fixed text (LongVT's tool message);
- a negative start (before the record's clip, for a clip), an end not after the start, a
  start at or past the end of the video and an end past it are errors shown to the model.

`video_path` is accepted and ignored: LongVT's model copies the file path its prompt
states; here the tool always reads the row's own video (no file outside the data is read).
Times are seconds of the original video, as for the built-in tools (`tools/video.py`).
"""

from __future__ import annotations

from videorl.rollout.tools.registry import ToolContext, ToolError, ToolResult, register_tool
from videorl.rollout.tools.schema import object_schema
from videorl.rollout.tools.video import (
    _as_image,
    _controlled_clip,
    _decode,
    tool_config,
    video_span,
)
from videorl.video.controls import TEMPORAL

CLIP_FPS = 1.0
CLIP_MAX_FRAMES = 128
CLIP_MIN_PIXELS = 28 * 28
CLIP_MAX_PIXELS = 224 * 224
# The text LongVT's VideoTools.execute returns with the frames.
RESULT_TEXT = "The tool executed successfully. Here are the processed result"


@register_tool(
    description="Crop a video to a specified duration.",
    parameters=object_schema(
        {
            "video_path": {"type": "string", "description": "Path to the video file"},
            "start_time": {"type": "number", "description": "Start time in seconds"},
            "end_time": {
                "type": "number",
                "description": "End time in seconds, must be > start_time",
            },
        },
        "start_time",
        "end_time",
    ),
    timeout_s=120.0,  # mcp_tool_config.yaml: timeout 120
)
def crop_video(
    ctx: ToolContext,
    start_time: float,
    end_time: float,
    video_path: str | None = None,  # noqa: ARG001 - LongVT's published tool schema names it
) -> ToolResult:
    lo, hi = video_span(ctx)
    if start_time < lo:  # lo is 0 unless the record is a clip of a longer file
        raise ToolError(f"start_time must be >= {lo:g}, got {start_time:g}")
    if not end_time > start_time:
        raise ToolError(f"end_time ({end_time:g}) must be greater than start_time ({start_time:g})")
    if start_time >= hi:
        raise ToolError(f"start_time ({start_time:g}s) exceeds the video's end ({hi:g}s)")
    if end_time > hi:
        raise ToolError(f"end_time ({end_time:g}s) exceeds the video's end ({hi:g}s)")
    config = tool_config(
        ctx,
        fps=CLIP_FPS,
        min_frames=1,
        max_frames=CLIP_MAX_FRAMES,
        min_pixels=CLIP_MIN_PIXELS,
        max_pixels=CLIP_MAX_PIXELS,
        total_pixels=CLIP_MAX_FRAMES * CLIP_MAX_PIXELS,
    )
    clip = _controlled_clip(ctx, _decode(ctx, start_time, end_time, config))
    images = tuple(_as_image(frame, ctx) for frame in clip.frames)
    return ToolResult(RESULT_TEXT, images, under_control=ctx.control in TEMPORAL)
