"""Fewer frames of a decoded video: what a prompt over its token budget is trimmed to
(`rollout/prompt_budget.py`, `data.long_prompts: trim`)."""

from __future__ import annotations

from dataclasses import replace

from videorl.video.decode import DecodedVideo


def fewer_frames(video: DecodedVideo, n: int) -> DecodedVideo:
    """`n` of the video's `T` frames at the sampling rule's uniform stride: positions
    `k * T // n` (k < n), with their indices and timestamps; the actual fps becomes
    `n / duration` (the clip's duration is unchanged)."""
    total = video.meta.num_frames
    if not 0 < n <= total:
        raise ValueError(f"cannot keep {n} of {total} frames")
    keep = [k * total // n for k in range(n)]
    meta = video.meta
    fps = n / meta.duration if meta.duration > 0 else meta.fps
    return DecodedVideo(
        frames=video.frames[keep],
        meta=replace(
            meta,
            frame_indices=tuple(meta.frame_indices[i] for i in keep),
            timestamps=tuple(meta.timestamps[i] for i in keep),
            fps=fps,
        ),
    )
