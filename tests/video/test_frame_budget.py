"""Per-prompt frame budgets (ParaVT's nFrames gating, `video/frame_budget.py`)."""

from __future__ import annotations

from collections import Counter

import torch

from videorl.video.decode import DecodedVideo
from videorl.video.frame_budget import frame_budget, keep_frames
from videorl.video.meta import VideoMeta

BUDGETS = (4, 8, 16, 32, 64)


def _video(frames: int) -> DecodedVideo:
    meta = VideoMeta(
        source_fps=10.0,
        duration=frames / 2,
        frame_indices=tuple(range(0, 5 * frames, 5)),
        timestamps=tuple(i / 2 for i in range(frames)),
        fps=2.0,
    )
    pixels = torch.arange(frames, dtype=torch.uint8)[:, None, None, None].expand(frames, 3, 2, 2)
    return DecodedVideo(pixels.contiguous(), meta)


def test_a_budget_keeps_evenly_spaced_frames_with_their_times():
    kept = keep_frames(_video(64), 4)
    assert kept.frames[:, 0, 0, 0].tolist() == [0, 21, 42, 63]
    assert kept.meta.timestamps == (0.0, 10.5, 21.0, 31.5)
    assert kept.meta.frame_indices == (0, 105, 210, 315)
    assert kept.meta.fps == 4 / 32
    assert keep_frames(_video(8), 16).frames.shape[0] == 8  # never more than decoded


def test_the_budget_is_fixed_per_record_and_spread_over_records():
    assert frame_budget(BUDGETS, "q1") == frame_budget(BUDGETS, "q1")
    drawn = Counter(frame_budget(BUDGETS, f"q{i}") for i in range(500))
    assert set(drawn) == set(BUDGETS) and min(drawn.values()) > 60
    assert [frame_budget(BUDGETS, f"q{i}", seed=1) for i in range(20)] != [
        frame_budget(BUDGETS, f"q{i}") for i in range(20)
    ]
