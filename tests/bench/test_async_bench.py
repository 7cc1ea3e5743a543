"""bench/async.py: in `--quick` mode both arms train and the results hold their shape (in a
subprocess: the bench quiets logging and warnings for its whole process); the docs show the
saved results."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.bench import BENCH, bench_module


@pytest.mark.slow  # trains twice, spawning a rollout worker
def test_quick_run_measures_sync_and_async(tmp_path):
    out = tmp_path / "async.json"
    done = subprocess.run(
        [sys.executable, str(BENCH / "async.py"), "--quick", "--work", str(tmp_path)]
        + ["--out", str(out)],
        capture_output=True,
        text=True,
        timeout=240,  # ~45 s alone on 2 cores: only a hang reaches it
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = {row["variant"]: row for row in json.loads(out.read_text())["rows"]}
    oversampled = "async, staleness 2, oversample 2, continue"
    assert set(rows) == {"sync, 1 thread", "async, staleness 1", oversampled}
    for row in rows.values():
        assert row["steps_per_s"] > 0
        assert 0 <= row["trainer_idle"] <= 1 and 0 <= row["rollout_idle"] <= 1
        assert 0 < row["length_mean"] < 16  # the long-tailed policy ends rows early
    assert rows["sync, 1 thread"]["speedup_vs_best_sync"] == 1.0
    assert rows["async, staleness 1"]["staleness_mean"] == 1.0  # steps 3.. train stale
    assert 1.0 <= rows[oversampled]["staleness_mean"] <= 2.0


def test_the_docs_show_the_saved_results():
    bench = bench_module("async")
    saved = json.loads((bench.ROOT / "bench" / "results" / "async.json").read_text())
    committed = bench_module("harness").marked_text(bench.PAGE, "bench/async.py")
    assert committed == bench.table(saved), (
        "stale: run PYTHONPATH=src python bench/async.py --write"
    )
