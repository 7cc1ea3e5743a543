"""Synthetic gold tool trajectories: what `videorl sft` teaches with `sft.target:
tool_trajectory` (docs/tools.md).

The data sets videorl reads have no recorded tool use, so a gold trajectory is made from the
record: one model turn that calls `get_clip` over the whole video at the highest rate of
`RATES` whose frames fit one clip (`VideoToolLimits.max_frames`), the tool turn with that
clip (run for real, `multiturn.forced_trajectory`), then the record's serialized answer
(`serialize_annotation`, OraRL's annotation row):

    <tool_call>
    {"name": "get_clip", "arguments": {"start": 0, "end": 16, "fps": 1}}
    </tool_call>                                   -> clip of 16 frames at 1 fps
    <answer>6.5 to 7.5</answer>

The call depends only on what the prompt shows (the video's length), never on the answer,
so it is a call the model can learn to make before it knows where the event is; the clip
then shows every second of the video, where the prompt's frames may have skipped the event.
A record without a video gets the direct answer only, and so does a record drawn to
answer directly (`sft.tool_call_fraction` < 1: a mix of tool and direct targets).
"""

from __future__ import annotations

import json
import math

from videorl.data.records import TaskRecord
from videorl.rewards.annotation import serialize_annotation
from videorl.rollout.tools.registry import VideoToolLimits
from videorl.video.decode import DecodedVideo

RATES = (8.0, 4.0, 2.0, 1.0, 0.5, 0.25, 0.1)  # frames per second a gold call may ask for


def gold_clip_call(video: DecodedVideo, limits: VideoToolLimits) -> str:
    """The `get_clip` call over the whole of `video` (whole seconds inside it) at the
    highest of `RATES` within `limits` whose frames fit `limits.max_frames`."""
    meta = video.meta
    start = math.ceil(meta.clip_start)
    end = max(start + 1, math.floor(meta.clip_start + meta.duration))
    fitting = [r for r in RATES if r <= limits.max_fps and r * (end - start) <= limits.max_frames]
    fps = fitting[0] if fitting else RATES[-1]
    arguments = {"start": start, "end": end, "fps": fps if fps < 1 else int(fps)}
    call = json.dumps({"name": "get_clip", "arguments": arguments})
    return f"<tool_call>\n{call}\n</tool_call>"


def gold_turns(
    record: TaskRecord,
    video: DecodedVideo | None,
    think: bool,
    limits: VideoToolLimits,
    call: bool = True,
) -> list[str]:
    """The model turns of `record`'s gold trajectory: the `get_clip` call, then the answer
    (the answer alone without `call`, or for a record without a video)."""
    answer = serialize_annotation(record, think=think)
    if not call or record.video is None or video is None or video.meta.duration <= 0:
        return [answer]
    return [gold_clip_call(video, limits), answer]
