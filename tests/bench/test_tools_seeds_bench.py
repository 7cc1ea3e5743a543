"""bench/tools_seeds.py reads a clone's tools quickstart back: the eval's scores with tools and
under each control, the GRPO curves' first and last windows; it never reuses a clone."""

from __future__ import annotations

import json

import pytest

from tests.bench import bench_module


@pytest.fixture(scope="module")
def seeds():
    return bench_module("tools_seeds")


def fake_run(clone, real: float, frozen: float, reversed_: float, calls: list[float]) -> None:
    """The two files a finished tools quickstart leaves that the bench reads."""
    family = {"temporal_grounding": {"mIoU": real}}
    controls = {
        name: {"families": {"temporal_grounding": {"mIoU": score}}}
        for name, score in (("frozen", frozen), ("reversed", reversed_))
    }
    metrics = {"tools": {"with_tools": family}, "controls": controls}
    (clone / "runs/tools_quickstart/eval").mkdir(parents=True)
    (clone / "runs/tools_quickstart/eval/metrics.json").write_text(json.dumps(metrics))
    rows = [
        {"step": step, "tools/calls_per_row": c, "reward/mean": step / 10}
        for step, c in enumerate(calls, start=1)
    ]
    train = clone / "runs/tools_quickstart/train"
    train.mkdir(parents=True)
    (train / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_a_seed_row_has_its_gains_and_its_curves_windows(seeds, tmp_path):
    fake_run(tmp_path, real=40.0, frozen=10.0, reversed_=15.0, calls=[0.0, 0.5, 1.0, 1.0])
    (tmp_path / "seconds.txt").write_text("600.0\n")
    row = seeds.read_row(tmp_path, seed=2, window=2)
    assert row["seed"] == 2 and row["minutes"] == 10.0
    assert (row["gain_frozen"], row["gain_reversed"]) == (30.0, 25.0)
    assert (row["calls_first"], row["calls_last"]) == (0.25, 1.0)
    assert row["reward_first"] == pytest.approx(0.15) and row["reward_last"] == pytest.approx(0.35)
    line = seeds.table([row], window=2).splitlines()[2]
    assert line == "| 2 | 40.0 | 10.0 | 15.0 | +30.0 | +25.0 | 0.25 | 1.00 | 0.150 | 0.350 |"


def test_a_clone_folder_is_never_reused(seeds, tmp_path):
    (tmp_path / "seed-0").mkdir()
    with pytest.raises(SystemExit, match="seed-0 exists; remove it or pass --collect"):
        seeds.fresh_clone(tmp_path / "seed-0")


def test_tools_page_holds_the_table_the_results_make(seeds):
    saved = json.loads(seeds.OUT.read_text())
    committed = bench_module("harness").marked_text(seeds.PAGE, "bench/tools_seeds.py")
    assert committed == seeds.table(saved["rows"], saved["window"]), (
        "docs/tools.md is stale: PYTHONPATH=src python bench/tools_seeds.py --collect --write"
    )


def test_collect_keeps_the_rows_of_seeds_not_read_again(seeds, tmp_path, monkeypatch):
    out = tmp_path / "tools_seeds.json"
    old = {"seed": 0, "mIoU": 1.0, "commit": "abc1234"}
    out.write_text(json.dumps({"rows": [old, {"seed": 1, "mIoU": 2.0}]}))
    monkeypatch.setattr(seeds, "OUT", out)
    fake_run(tmp_path / "seed-1", real=40.0, frozen=10.0, reversed_=15.0, calls=[0.5, 1.0])
    monkeypatch.setattr(seeds, "clone_commit", lambda clone: "def5678")
    monkeypatch.setattr(seeds, "table", lambda rows, window: "table")
    seeds.main(["--seeds", "1", "--collect", "--window", "1", "--work", str(tmp_path)])
    rows = json.loads(out.read_text())["rows"]
    assert rows[0] == old  # seed 0 was not read again: its row stays, with its commit
    assert rows[1]["mIoU"] == 40.0 and rows[1]["commit"] == "def5678"
