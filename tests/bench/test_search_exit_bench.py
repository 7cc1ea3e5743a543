"""bench/search_exit.py runs end to end in `--quick` mode and its numbers hold their
invariants: the query finds the event where no control can, early exit only shortens
(in a subprocess: the bench quiets logging and warnings for its whole process)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.bench import BENCH, bench_module


def test_quick_run(tmp_path):
    bench = bench_module("search_exit")
    out = tmp_path / "search_exit.json"
    done = subprocess.run(
        [sys.executable, str(BENCH / "search_exit.py"), "--quick", "--work", str(tmp_path / "w")]
        + ["--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,  # ~22 s alone on 2 cores: only a hang reaches it
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    saved = json.loads(out.read_text())
    rates = saved["retrieval"]["hit_rate"]
    assert rates["seek"] == 1.0  # the colour index finds every event in the window
    assert all(rates["seek"] > rates[f"seek_{c}"] for c in bench.CONTROLS)
    exit_ = saved["early_exit"]
    assert exit_["same_answer_as_full_run"] == 1.0
    assert exit_["tokens_gated"] < exit_["tokens_full"] and 0 < exit_["exit_rate"] < 1
