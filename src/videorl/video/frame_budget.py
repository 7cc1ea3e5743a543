"""Per-prompt frame budgets (ParaVT's nFrames gating, docs/tools.md#paravt).

ParaVT (`paravt/rl/workflow.py: _resolve_nframes`) draws the prompt video's frame budget K
from {4, 8, 16, 32, 64} once per prompt, seeded by the prompt's video, so that every rollout
of a group sees the same K: a small K hides evidence, so calling the tool can beat
answering directly, and the full budget keeps answering directly possible. Here K is drawn
from `data.frame_budgets` by a stable hash of the record id and the run's seed (the same K
for a record in every epoch and on every rank), and the decoded video keeps K of its frames,
evenly spaced.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import replace

import torch

from videorl.video.decode import DecodedVideo


def frame_budget(budgets: Sequence[int], record_id: str, seed: int = 0) -> int:
    """The budget of `record_id`: `budgets[crc32(f"{seed}:{record_id}") % len(budgets)]`."""
    return budgets[zlib.crc32(f"{seed}:{record_id}".encode()) % len(budgets)]


def keep_frames(video: DecodedVideo, budget: int) -> DecodedVideo:
    """`video` with at most `budget` of its frames, evenly spaced from the first to the last
    (indices `round(i (T - 1) / (K - 1))`), their indices, timestamps and fps with them."""
    count = video.frames.shape[0]
    if budget >= count:
        return video
    picked = torch.linspace(0, count - 1, budget).round().long().tolist() if budget > 1 else [0]
    meta = video.meta
    fps = budget / meta.duration if meta.duration > 0 else meta.fps
    return replace(
        video,
        frames=video.frames[picked].contiguous(),
        meta=replace(
            meta,
            frame_indices=tuple(meta.frame_indices[i] for i in picked),
            timestamps=tuple(meta.timestamps[i] for i in picked),
            fps=fps,
        ),
    )
