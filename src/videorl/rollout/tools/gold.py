"""Synthetic gold tool trajectories: what `videorl sft` teaches with `sft.target:
tool_trajectory` (docs/tools.md).

The data sets videorl reads have no recorded tool use, so a gold trajectory is made from the
record: model turns that call the first tool of `rollout.tools` with a gold plan
(`GOLD_TOOLS`), the tool turns with their results (run for real,
`multiturn.forced_trajectory`), then the record's serialized answer (`serialize_annotation`,
OraRL's annotation row). The plans:

- `get_clip`: one call over the whole video at the highest rate of `RATES` whose frames fit
  one clip (`VideoToolLimits.max_frames`);
- `crop_video` (LongVT, ParaVT): two calls, the first and the second half of the video (its
  1 fps crops show every second); both in one turn (parallel crops) when a turn may make
  two calls (`rollout.max_calls_per_turn` >= 2), else one a turn;
- `select_frames` (FrameThinker): one selection from the first to the last source frame,
  after a `<think>` that names the range (FrameThinker's reward scores a selecting turn 0
  unless the last two integers of its `<think>` are the pair it selects,
  rewards/framethinker.py);
- `seek_video_frames` (TimeSearch-R): one search with the question as the query.

    <tool_call>
    {"name": "get_clip", "arguments": {"start": 0, "end": 16, "fps": 1}}
    </tool_call>                                   -> clip of 16 frames at 1 fps
    <answer>6.5 to 7.5</answer>

A call depends only on what the prompt shows (the video's length, the question), never on
the answer, so it is a call the model can learn to make before it knows the answer; its
result then shows the whole video, where the prompt's frames may have skipped the event.
A record without a video gets the direct answer only, and so does a record drawn to
answer directly (`sft.tool_call_fraction` < 1: a mix of tool and direct targets).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from typing import Any

from videorl.config.sections import GOLD_TOOLS
from videorl.data.records import TaskRecord
from videorl.rewards.annotation import serialize_annotation
from videorl.rollout.tools.registry import VideoToolLimits
from videorl.video.decode import DecodedVideo

RATES = (8.0, 4.0, 2.0, 1.0, 0.5, 0.25, 0.1)  # frames per second a gold call may ask for
Call = tuple[str, dict[str, Any]]  # (tool name, arguments)
Plan = Callable[[TaskRecord, DecodedVideo, VideoToolLimits, int], list[list[Call]]]


def whole_seconds(video: DecodedVideo) -> tuple[int, int]:
    """(start, end): the whole seconds of the source video inside `video`'s span."""
    meta = video.meta
    start = math.ceil(meta.clip_start)
    return start, max(start + 1, math.floor(meta.clip_start + meta.duration))


def format_calls(calls: Sequence[Call]) -> str:
    """One model turn making `calls`, in order, as Qwen `<tool_call>` blocks."""
    blocks = [json.dumps({"name": name, "arguments": arguments}) for name, arguments in calls]
    return "\n".join(f"<tool_call>\n{block}\n</tool_call>" for block in blocks)


def select_thought(calls: Sequence[Call]) -> str:
    """The `<think>` before a turn's calls: for a `select_frames` call, one naming the range
    it selects (its last two integers, as FrameThinker's consistency rule reads them); none
    for other tools."""
    ranges = [args for name, args in calls if name == "select_frames"]
    if not ranges:
        return ""
    last = ranges[-1]
    return f"<think>I choose frames {last['start_frame']} to {last['end_frame']}.</think>\n"


def clip_plan(
    _: TaskRecord, video: DecodedVideo, limits: VideoToolLimits, __: int
) -> list[list[Call]]:
    """get_clip over the whole video at the highest of `RATES` within `limits` whose frames
    fit `limits.max_frames`."""
    start, end = whole_seconds(video)
    fitting = [r for r in RATES if r <= limits.max_fps and r * (end - start) <= limits.max_frames]
    fps = fitting[0] if fitting else RATES[-1]
    return [[("get_clip", {"start": start, "end": end, "fps": fps if fps < 1 else int(fps)})]]


def crop_plan(
    _: TaskRecord, video: DecodedVideo, __: VideoToolLimits, calls_per_turn: int
) -> list[list[Call]]:
    """crop_video of each half, [start, mid) and [mid, end), mid = (start + end) // 2:
    both in one turn when `calls_per_turn` >= 2, else one a turn."""
    start, end = whole_seconds(video)
    mid = max(start + 1, (start + end) // 2)
    halves: list[Call] = [
        ("crop_video", {"start_time": start, "end_time": mid}),
        ("crop_video", {"start_time": mid, "end_time": max(end, mid + 1)}),
    ]
    return [halves] if calls_per_turn >= 2 else [[half] for half in halves]


def select_plan(
    _: TaskRecord, video: DecodedVideo, __: VideoToolLimits, ___: int
) -> list[list[Call]]:
    """select_frames from frame 0 to the last source frame, round(duration * source fps)."""
    last = round(video.meta.duration * video.meta.source_fps)
    return [[("select_frames", {"start_frame": 0, "end_frame": last})]]


def seek_plan(
    record: TaskRecord, _: DecodedVideo, __: VideoToolLimits, ___: int
) -> list[list[Call]]:
    """seek_video_frames with the question as the query (two frames)."""
    return [[("seek_video_frames", {"query": record.problem, "num_frames": 2})]]


GOLD_PLANS: dict[str, Plan] = {
    "get_clip": clip_plan,
    "crop_video": crop_plan,
    "select_frames": select_plan,
    "seek_video_frames": seek_plan,
}


def gold_tool(tools: Sequence[str]) -> str:
    """The first of `tools` with a gold plan."""
    found = next((name for name in tools if name in GOLD_PLANS), None)
    if found is None:
        raise ValueError(f"no gold plan for any of {list(tools)}; plans: {list(GOLD_TOOLS)}")
    return found


def gold_turns(
    record: TaskRecord,
    video: DecodedVideo | None,
    think: bool,
    limits: VideoToolLimits,
    call: bool = True,
    tools: Sequence[str] = ("get_clip",),
    calls_per_turn: int = 4,
) -> list[str]:
    """The model turns of `record`'s gold trajectory: the calls of the gold plan of
    `gold_tool(tools)`, then the answer (the answer alone without `call`, or for a record
    without a video)."""
    answer = serialize_annotation(record, think=think)
    if not call or record.video is None or video is None or video.meta.duration <= 0:
        return [answer]
    plan = GOLD_PLANS[gold_tool(tools)](record, video, limits, calls_per_turn)
    return [select_thought(turn) + format_calls(turn) for turn in plan] + [answer]
