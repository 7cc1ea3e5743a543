"""TimeSearch-R's `seek_video_frames` tool, for `configs/timesearch_r.yaml`
(docs/fidelity.md#timesearch-r-configstimesearch_ryaml).

Import this module through `rollout.tool_modules: [videorl.rollout.tools.timesearch]`; it
registers `seek_video_frames(query, start_time, end_time, num_frames)` as Time-Search/
TimeSearch-R `time_r1/utils/video_tools.py` (`VideoFrameSeeker`) defines it:

- the video's indexed frames (`tools/frame_index.py`) inside `[start_time, end_time]`
  seconds (default: the whole video);
- with a query, `num_frames` of them (1..8, default 8) chosen by the greedy MAP inference of
  a determinantal point process whose kernel is `L = diag(r) S diag(r)`: `S` the frames'
  cosine similarities, `r` each frame's similarity to the query, min-max scaled to [0, 1]
  (`utils/key_frame_selector_v2.py`, `DppTimeSelector`, theta -1): relevant frames that
  differ from each other; without a query, frames evenly spaced;
- the chosen frames in time order, as images at their native size within the run's image
  bounds, and TimeSearch-R's tool text (`prompt/tool_response.py`) naming their times.

Bad requests are errors shown to the model, never a crash: a window outside the video or
with no indexed frame, an end before the start, a query the index cannot embed.
"""

from __future__ import annotations

import math

import torch

from videorl.rollout.tools import frame_index
from videorl.rollout.tools.registry import ToolContext, ToolError, ToolResult, register_tool
from videorl.rollout.tools.schema import object_schema, seconds
from videorl.rollout.tools.video import _as_image, _native_frame, video_span
from videorl.video.controls import TEMPORAL

MAX_NUM_KEY_FRAMES = 8  # video_tools.py: MAX_NUM_KEY_FRAMES (env default 8)
MAX_QUERY_CHARS = 1000
# prompt/tool_response.py TOOL_RESPONSE_PROMPT
RESPONSE_TEXT = (
    "Here are selected frames. They are located at {timestamps}.\n"
    "If the frames provided above are sufficient to answer the user's question, please put "
    "your final answer within <answer></answer>. Otherwise invoke the tool again with "
    "different parameters in JSON format.\n"
)


def dpp_select(relevance: torch.Tensor, embeddings: torch.Tensor, k: int) -> list[int]:
    """`k` of N frames by greedy DPP MAP inference (Chen et al. 2018, as `DppTimeSelector`):
    `L = diag(r) E E^T diag(r)` with `r` min-max scaled; the indices in time order. When the
    kernel runs out of rank before `k` picks, the rest are the most relevant frames left."""
    n = len(relevance)
    if n <= k:
        return list(range(n))
    span = relevance.max() - relevance.min()
    r = (relevance - relevance.min()) / span if span > 0 else torch.ones_like(relevance)
    kernel = r[:, None] * (embeddings @ embeddings.T) * r[None, :]
    cis = torch.zeros(k, n, dtype=kernel.dtype)
    gains = kernel.diagonal().clone()
    chosen: list[int] = []
    for i in range(k):
        j = int(torch.argmax(gains))
        if gains[j] <= 1e-10:
            break
        chosen.append(j)
        e = (kernel[j] - cis[:i, j] @ cis[:i]) / gains[j].sqrt()
        cis[i] = e
        gains -= e.square()
        gains[chosen] = -math.inf
    rest = [int(i) for i in torch.argsort(relevance, descending=True) if int(i) not in chosen]
    return sorted(chosen + rest[: k - len(chosen)])


def evenly(n: int, k: int) -> list[int]:
    """`np.round(np.linspace(0, n - 1, k))`, as video_tools.py samples without a query."""
    if n <= k:
        return list(range(n))
    return sorted({round(i * (n - 1) / (k - 1)) for i in range(k)}) if k > 1 else [0]


@register_tool(
    description=(
        "Search and select video frames according to textual query and temporal window. "
        "Time is in seconds."
    ),
    parameters=object_schema(
        {
            "query": {
                "type": "string",
                "description": (
                    "The query is used to describe the object, scene, or event of interest in "
                    "the video thoroughly and clearly. "
                ),
            },
            "start_time": seconds("Start time of the segment of interest. "),
            "end_time": seconds("End time of the segment of interest. "),
            "num_frames": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_NUM_KEY_FRAMES,
                "description": (
                    f"Number of frames to sample (maximum {MAX_NUM_KEY_FRAMES}). Default is "
                    f"{MAX_NUM_KEY_FRAMES}."
                ),
            },
        },
        "query",
    ),
    timeout_s=60.0,
)
def seek_video_frames(
    ctx: ToolContext,
    query: str,
    start_time: float | None = None,
    end_time: float | None = None,
    num_frames: int = MAX_NUM_KEY_FRAMES,
) -> ToolResult:
    lo, hi = video_span(ctx)
    start = lo if start_time is None else float(start_time)
    end = hi if end_time is None else float(end_time)
    if start >= hi:
        raise ToolError(f"start_time={start:g} is past the video's end ({hi:g} s)")
    if not end > start:
        raise ToolError(f"end_time={end:g} must be greater than start_time={start:g}")
    if len(query) > MAX_QUERY_CHARS:
        raise ToolError(f"the query has {len(query)} characters; keep it under {MAX_QUERY_CHARS}")
    store = frame_index.store()
    index = store.get(ctx)
    inside = ((index.times >= start - 1e-6) & (index.times <= end + 1e-6)).nonzero().flatten()
    if inside.numel() == 0:
        raise ToolError(f"no indexed frame lies in [{start:g}, {end:g}] s; widen the window")
    embeddings = index.embeddings[inside]
    if query.strip():
        relevance = embeddings @ store.embedder.text(query)
        local = dpp_select(relevance, embeddings, num_frames)
    else:  # no query: evenly spaced frames
        local = evenly(len(inside), num_frames)
    times = [float(index.times[inside[i]]) for i in local]
    images = tuple(_as_image(_native_frame(ctx, t).frames[0], ctx) for t in times)
    stamps = ",".join(f"{t:.1f}s" for t in times)
    return ToolResult(
        RESPONSE_TEXT.format(timestamps=stamps), images, under_control=ctx.control in TEMPORAL
    )
