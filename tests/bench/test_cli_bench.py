"""`bench/cli.py --quick`: every common user error ends in one `error:` line with exit code
2, and `eval --compare` of two finished evals succeeds (the times are the bench's, not
asserted here)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.bench import BENCH


@pytest.mark.slow
def test_cli_bench_cases_end_as_a_user_expects(tmp_path):
    out = tmp_path / "cli.json"
    command = [sys.executable, str(BENCH / "cli.py"), "--quick", "--work", str(tmp_path)]
    # ~22 s alone on 2 cores (8 CLI processes; the bench times their start-up): a hang only
    subprocess.run([*command, "--out", str(out)], check=True, capture_output=True, timeout=120)
    rows = {row["case"]: row for row in json.loads(out.read_text())["rows"]}
    compare = rows.pop("eval_compare")
    assert compare["exit_code"] == 0 and compare["first_line"].startswith("A: ")
    for name, row in rows.items():
        assert row["exit_code"] == 2 and row["first_line"].startswith("error: "), name
    assert "did you mean 'steps'" in rows["config_key_typo"]["first_line"]
    assert "is in use" in rows["busy_port"]["first_line"]
