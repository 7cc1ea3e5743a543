"""FrameThinker's frame-spotlighting actions as tools, for `configs/framethinker.yaml`
(docs/fidelity.md#framethinker-configsframethinkeryaml).

Import through `rollout.tool_modules: [videorl.rollout.tools.framethinker]`; it registers
the two actions of FrameThinker's environment (lcqysl/FrameThinker-RL,
`verl/workers/agent/envs/visual_agent/think_with_video.py`):

- `select_frames(start_frame, end_frame)` ("choose frames between a and b"): 8 frames (12
  for a video over 300 s) evenly spaced strictly inside the source frames `(a, b)`, as
  images, at most 640 x 360 pixels (448 x 252 over 300 s); a start past the video's last
  frame and a range of `end - start <= 8` (12) frames are errors; an end past the video is
  clamped to its last frame;
- `get_frame_number(time)` ("get frame number at time M:SS"): `int(seconds * fps)` of the
  source video, as text ("Frame number at time 1:05 is: 1625.").

FrameThinker's model writes these as `<action>` text; here they are Qwen tool calls.
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

LONG_VIDEO_S = 300.0  # think_with_video.py reset(): over 300 s, 12 frames of 448 x 252
SHORT, LONG = (8, 640 * 360), (12, 448 * 252)


def frames_per_selection(duration: float) -> tuple[int, int]:
    """(frames, max pixels) of one selection for a video of `duration` seconds."""
    return LONG if duration > LONG_VIDEO_S else SHORT


def _source_fps(ctx: ToolContext) -> float:
    if ctx.video is None or ctx.media is None or ctx.video.meta.source_fps <= 0:
        raise ToolError("this row has no video to select frames from")
    return ctx.video.meta.source_fps


@register_tool(
    description=(
        "Choose frames between two frame numbers of the video: returns evenly spaced frames "
        "strictly between them, each labelled with its frame number."
    ),
    parameters=object_schema(
        {
            "start_frame": {"type": "integer", "minimum": 0},
            "end_frame": {"type": "integer", "minimum": 0},
        },
        "start_frame",
        "end_frame",
    ),
)
def select_frames(ctx: ToolContext, start_frame: int, end_frame: int) -> ToolResult:
    fps = _source_fps(ctx)
    lo, hi = video_span(ctx)
    total = round((hi - lo) * fps)
    count, pixels = frames_per_selection(hi - lo)
    if start_frame > total:
        raise ToolError(f"start_frame {start_frame} is past the video's last frame {total}")
    end_frame = min(end_frame, total)
    if start_frame >= end_frame - count:
        raise ToolError(f"choose more than {count} frames: end_frame - start_frame > {count}")
    config = tool_config(
        ctx,
        fps=fps,
        min_frames=count,
        max_frames=count,
        max_pixels=pixels,
        total_pixels=count * pixels,
    )
    start, end = lo + (start_frame + 1) / fps, lo + end_frame / fps
    clip = _controlled_clip(ctx, _decode(ctx, start, end, config))
    numbers = list(clip.meta.frame_indices)
    images = tuple(_as_image(frame, ctx) for frame in clip.frames)
    text = "\n".join(f"frame {n}:" for n in numbers)
    return ToolResult(text, images, under_control=ctx.control in TEMPORAL)


@register_tool(
    description="Get the frame number of the video at a time written as M:SS.",
    parameters=object_schema(
        {"time": {"type": "string", "description": "a time as M:SS"}},
        "time",
    ),
)
def get_frame_number(ctx: ToolContext, time: str) -> str:
    fps = _source_fps(ctx)
    try:
        minutes, seconds = (int(part) for part in time.split(":"))
    except ValueError:
        raise ToolError(f"time must be M:SS, got {time!r}") from None
    return f"Frame number at time {time} is: {int((minutes * 60 + seconds) * fps)}."
