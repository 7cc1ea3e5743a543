"""bench/async.py in `--quick` mode: both arms train and the results hold their shape."""

from __future__ import annotations

import pytest

from tests.bench import bench_module


@pytest.mark.slow  # trains twice, spawning a rollout worker
def test_quick_run_measures_sync_and_async(tmp_path):
    result = bench_module("async").main(
        ["--quick", "--work", str(tmp_path), "--out", str(tmp_path / "async.json")]
    )
    rows = {row["variant"]: row for row in result["rows"]}
    assert set(rows) == {"sync, 1 thread", "async, staleness 1"}
    for row in rows.values():
        assert row["steps_per_s"] > 0
        assert 0 <= row["trainer_idle"] <= 1 and 0 <= row["rollout_idle"] <= 1
    assert rows["sync, 1 thread"]["speedup_vs_best_sync"] == 1.0
    assert rows["async, staleness 1"]["staleness_mean"] == 1.0  # steps 3.. train stale
    assert (tmp_path / "async.json").is_file()


def test_the_docs_show_the_saved_results():
    import json

    bench = bench_module("async")
    saved = json.loads((bench.ROOT / "bench" / "results" / "async.json").read_text())
    committed = bench_module("harness").marked_text(bench.PAGE, "bench/async.py")
    assert committed == bench.table(saved), (
        "stale: run PYTHONPATH=src python bench/async.py --write"
    )
