"""bench/long_video.py: `--quick` runs end to end (one 30 s file made by repeating an encoded
piece) and every reader returns the frames the old one does, the new one decoding fewer."""

from __future__ import annotations

import json
import subprocess
import sys

import av
import pytest

from tests.bench import BENCH, bench_module


@pytest.mark.slow
def test_quick_run_writes_every_reader(tmp_path):
    out = tmp_path / "long_video.json"
    done = subprocess.run(
        [sys.executable, str(BENCH / "long_video.py"), "--quick", "--work", str(tmp_path)]
        + ["--out", str(out)],
        capture_output=True,
        text=True,
        timeout=150,  # ~25 s alone on 2 cores (a process per reader): only a hang reaches it
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "| 0.5 min | 250f | new |" in done.stdout  # the printed table
    result = json.loads(out.read_text())
    run = result["files"]["0.5min_kf250f"]
    assert all(run["identical"].values()) and {"before", "new", "seek_each"} <= set(
        run["identical"]
    )
    readers = run["readers"]
    assert readers["new"]["frames"] == [60, 3, 252, 420]  # 2 fps over 30 s, resized
    decoded = {name: r["frames_decoded"] for name, r in readers.items()}
    assert decoded["new"] < decoded["before"] < decoded["seek_each"]
    assert all(r["peak_rss_mb"] > r["baseline_rss_mb"] > 0 for r in readers.values())
    assert result["summary"]["0.5min_kf250f"]["speedup_over_before"] > 0
    # the repeated piece keeps a keyframe every 250 frames
    (made,) = (tmp_path / "long_video").glob("160x96-0.5min_kf250f.mp4")
    with av.open(str(made)) as container:
        stream = container.streams.video[0]
        keys = [
            k for k, p in enumerate(p for p in container.demux(stream) if p.size) if p.is_keyframe
        ]
    assert keys == [0, 250, 500, 750]


def test_the_docs_show_the_committed_results():
    bench = bench_module("long_video")
    result = json.loads((BENCH / "results" / "long_video.json").read_text())
    assert harness_marked(bench) == bench.page_text(result)
    summary = result["summary"]
    assert summary["10min_kf250f"]["speedup_over_before"] is not None


def harness_marked(bench) -> str:
    return bench.harness.marked_text(bench.PAGE, bench.SCRIPT)


@pytest.mark.slow  # two short training runs, one with a prefetch worker
def test_quick_step_time_runs_prefetch_0_and_1_with_the_same_metrics(tmp_path):
    out = tmp_path / "long_video.json"
    out.write_text(json.dumps({"files": {}, "summary": {}}))  # the decode part, kept
    done = subprocess.run(
        [sys.executable, str(BENCH / "long_video.py"), "--steps", "2", "--quick"]
        + ["--work", str(tmp_path), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=100,  # ~17 s alone on 2 cores: only a hang reaches it
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["files"] == {} and result["step_time"]["same_metrics"] is True
    for workers in (0, 1):
        arm = result["step_time"][f"prefetch{workers}"]
        assert arm["step_s"]["n"] == 1 and arm["decode_s"]["median"] >= 0
    assert "prefetch 0 / 1 step time" in done.stdout


@pytest.mark.slow  # two train steps of the tiny model, in this process
def test_quick_encodes_counts_each_clip_once_with_the_cache(tmp_path, capsys):
    out = tmp_path / "long_video.json"
    out.write_text(json.dumps({"files": {}, "summary": {}}))  # the decode part, kept
    bench = bench_module("long_video")
    bench.main(["--encodes", "--quick", "--work", str(tmp_path), "--out", str(out)])
    result = json.loads(out.read_text())
    assert result["files"] == {} and result["encodes"]["rows"] == 8
    before, after = result["encodes"]["before"], result["encodes"]["after"]
    keys = {"vision_encodes_per_row", "calls_per_row", "tower_items_step", "step_s", "step_cpu_s"}
    assert set(before) == set(after) == keys
    assert before["calls_per_row"] == after["calls_per_row"] == 1.0  # 4 rows call twice
    # after: 2 prompt videos (once per group) + 8 clips; before: turn 2 re-encodes each
    # caller's video and first clip, turn 3 its video and both clips
    assert after["vision_encodes_per_row"] == (2 + 8) / 8
    assert before["vision_encodes_per_row"] == (2 + 4 * 2 + 4 * 3) / 8
    assert after["tower_items_step"] < before["tower_items_step"]
    assert set(result["encodes"]["before_over_after"]) == keys - {"calls_per_row"}
    assert "| 3-turn tool rollout, after | 1.25 |" in capsys.readouterr().out
