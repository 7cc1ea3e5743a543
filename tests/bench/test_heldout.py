"""bench/heldout.py and bench/detector.py: the held-out scenes keep the quickstart's timing and
format, their nuisance moves on every frame, and the training-free detector finds the event
from the 2 fps frames."""

from __future__ import annotations

import numpy as np
import pytest

from tests.bench import bench_module
from videorl.data.loaders import load_records
from videorl.video.decode import decode_video

heldout = bench_module("heldout")
detector = bench_module("detector")


@pytest.mark.parametrize(("scene", "grid"), [("drift", 1.0), ("pan", 1.0), ("drift", 0.5)])
def test_a_scene_keeps_the_format_and_its_event_is_findable(tmp_path, scene, grid):
    heldout.write_heldout(tmp_path, scene, n=1, val=6, seed=3, grid=grid)
    records = load_records(tmp_path / "val.jsonl").records
    assert len(records) == 6 and {r.subtype for r in records} <= set(heldout.EVENTS[scene])
    ious = []
    for record in records:
        (t0, t1), duration = record.answer.windows[0], record.duration
        assert duration is not None and duration in range(8, 17)
        assert t1 - t0 in (1.0, 1.0 + grid)
        assert t0 % grid == 0 and t0 >= grid and t1 <= duration - grid
        video = decode_video(record.video.path, detector.CONFIG)  # type: ignore[arg-type]  # synthesised records carry it
        frames = video.frames.float()
        quiet = [k for k, t in enumerate(video.meta.timestamps) if not t0 <= t < t1]
        # nuisance: the frames without the event are not all alike (a plain screen would be)
        assert (frames[quiet[0]] - frames[quiet[-1]]).abs().mean() > 2
        ious.append(detector.iou(detector.detect(record), (t0, t1)))
    assert np.mean(ious) > 0.6, ious


def test_a_scene_refuses_a_grid_synth_does_not_draw(tmp_path):
    with pytest.raises(SystemExit, match="--tg-grid 0.25: choose one of 0.5, 1.0"):
        heldout.write_heldout(tmp_path, "drift", n=1, val=1, grid=0.25)
    assert not (tmp_path / "val.jsonl").exists()


def test_the_detector_takes_the_longest_run_above_the_largest_gap():
    scores = np.array([0.1, 0.12, 0.9, 0.11, 0.8, 0.85, 0.82, 0.1])
    assert detector.event_frames(scores) == (4, 6)


def test_the_docs_show_the_saved_heldout_results():
    bench = bench_module("heldout_learning")
    saved = bench.saved_results()
    assert saved and all(row["sft"] for result in saved for row in result["rows"])
    committed = bench_module("harness").marked_text(bench.PAGE, "bench/heldout_learning.py")
    assert committed == bench.markdown(saved)


@pytest.mark.parametrize("kind", ["shape", "broad"])
def test_pretraining_records_ask_about_what_the_video_shows(tmp_path, kind):
    pretrain = bench_module("pretrain_grounding")
    pretrain.write_pretrain(tmp_path, kind, n=1, val=4, seed=0)
    records = load_records(tmp_path / "val.jsonl").records
    assert len(records) == 4 and all(r.problem.startswith("When is the ") for r in records)
    for record in records:
        (t0, t1), duration = record.answer.windows[0], record.duration
        assert duration is not None and 8 <= duration <= 16
        assert 0 <= t0 < t1 <= duration and t1 - t0 < duration
        video = decode_video(record.video.path, detector.CONFIG)  # type: ignore[arg-type]  # synthesised records carry it
        assert len(video.frames) == round(2 * duration)  # every clip frame is a 2 fps sample


def test_pretraining_records_are_not_written_over_a_data_set(tmp_path):
    pretrain = bench_module("pretrain_grounding")
    (tmp_path / "val.jsonl").write_text("mine\n")
    with pytest.raises(SystemExit, match="val.jsonl exists"):
        pretrain.write_pretrain(tmp_path, "shape", n=1, val=1, seed=0)
    assert (tmp_path / "val.jsonl").read_text() == "mine\n"
    assert not (tmp_path / "train.jsonl").exists()
