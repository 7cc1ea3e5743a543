"""`data.prefetch_workers=1` trains exactly as 0: the same metrics at every step (times and
memory apart), the next step's videos decoded ahead by a worker process."""

from __future__ import annotations

import json

import pytest

from videorl.trainer.loop import run_training

pytestmark = pytest.mark.slow  # whole runs with a worker process


def _metrics(final) -> list[dict]:
    rows = [json.loads(line) for line in (final.parent / "metrics.jsonl").read_text().splitlines()]

    def measured(key: str) -> bool:  # clocks and memory, which no two runs share
        return key.startswith(("time/", "perf/")) or key.endswith("/seconds")

    return [{k: v for k, v in r.items() if not measured(k)} for r in rows]


def test_prefetch_gives_the_same_metrics(make_config, tmp_path, monkeypatch):
    from videorl.video import prefetch
    from videorl.video.cache import VideoCache

    started: list[int] = []
    real = prefetch.Prefetcher.ahead
    monkeypatch.setattr(
        prefetch.Prefetcher, "ahead", lambda self, media: started.append(real(self, media))
    )
    used: list[bool] = []
    take = VideoCache._take_ahead

    def spy(self, key):
        found = take(self, key)
        used.append(found is not None)
        return found

    monkeypatch.setattr(VideoCache, "_take_ahead", spy)
    runs = {}
    for workers in (0, 1):
        config, _ = make_config(
            "grpo",
            "trainer.steps=3",
            f"data.prefetch_workers={workers}",
            output=tmp_path / f"prefetch{workers}",
        )
        runs[workers] = _metrics(run_training(config))
    assert len(runs[0]) == 3 and runs[1] == runs[0]
    assert len(started) == 3 and sum(started) > 0  # videos were decoded ahead
    assert sum(used) > 0  # and a step took them
