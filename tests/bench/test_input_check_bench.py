"""bench/input_check.py: `--quick` measures both parts (a prompt's fingerprint and real train
steps with the check on and off); the docs show the committed results."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.bench import BENCH, bench_module


@pytest.mark.slow  # builds the tiny model and trains four steps
def test_quick_run_measures_prompts_and_steps(tmp_path):
    out = tmp_path / "input_check.json"
    done = subprocess.run(
        [sys.executable, str(BENCH / "input_check.py"), "--quick", "--work", str(tmp_path)]
        + ["--out", str(out)],
        capture_output=True,
        text=True,
        timeout=90,  # ~15 s alone on 2 cores: only a hang reaches it
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(out.read_text())
    (prompt,) = result["prompts"].values()
    assert prompt["check"]["median"] < prompt["record"]["median"]  # a lookup, not a hash
    steps = result["steps"]
    assert steps["fingerprint_s_per_step"]["median"] > 0
    assert steps["step_wall_s"]["on"]["n"] == steps["step_wall_s"]["off"]["n"] == 1


def test_the_docs_show_the_committed_results():
    bench = bench_module("input_check")
    result = json.loads((BENCH / "results" / "input_check.json").read_text())
    assert bench.harness.marked_text(bench.PAGE, bench.SCRIPT) == bench.page_text(result)
    assert not result["quick"] and set(result["prompts"]) == set(bench.SIZES)
