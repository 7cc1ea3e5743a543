"""`reward.sensitivity.shuffle=taro` reaches the sensitivity stage of a real (tiny) step:
the shuffled prompt's frames are `frames[taro_boundary_shuffle(...)]` (issue 31, item 7e)."""

from __future__ import annotations

import json

from videorl.rewards import sensitivity
from videorl.trainer import stages
from videorl.trainer.loop import run_training


def test_taro_law_shuffles_the_sensitivity_prompts(make_config, monkeypatch):
    calls = []
    real = sensitivity.taro_boundary_shuffle

    def spy(frame_indices, source_fps, window, radius, seed):
        calls.append((tuple(frame_indices), source_fps, tuple(window), radius))
        return real(frame_indices, source_fps, window, radius, seed)

    monkeypatch.setattr(stages, "taro_boundary_shuffle", spy)
    config, _ = make_config("taro", "trainer.steps=1", "reward.sensitivity.shuffle=taro")
    final = run_training(config)
    (row,) = [json.loads(x) for x in (final.parent / "metrics.jsonl").read_text().splitlines()]
    assert "sensitivity/d_mean" in row
    assert calls and all(radius == config.reward.sensitivity.radius for *_, radius in calls)
    assert all(fps > 0 and len(indices) > 1 for indices, fps, _, _ in calls)
