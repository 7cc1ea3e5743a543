"""The GPU proof kit cannot rot: `scripts/gpu_check.sh OUT --cpu --tiny` runs every part of
the GPU check end to end on the CPU with tiny models (the tests part on a -k subset of
tests/gpu, to stay fast), and its report holds each part's measurements; a part that fails
or overruns its limit is recorded without stopping the rest."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import gpu_check


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> tuple[dict, Path]:
    out, work = tmp_path_factory.mktemp("gpu_out"), tmp_path_factory.mktemp("gpu_work")
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "gpu_check.sh"), str(out), "--cpu", "--tiny"]
        + ["--work", str(work), "--tests-k", "sdpa_varlen and qwen2_5_vl"],
        env={**os.environ, "PYTHON": sys.executable, "OMP_NUM_THREADS": "1"},
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    log = (out / "gpu_check.log").read_text()[-6000:] if (out / "gpu_check.log").is_file() else ""
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:] + log
    return json.loads((out / "gpu_check.json").read_text()), out


@pytest.mark.slow
def test_every_part_runs_and_reports(report):
    result, out = report
    assert list(result["parts"]) == ["prepare", *gpu_check.gpu_parts.PARTS]
    assert all(part["status"] == "ok" for part in result["parts"].values())
    tests = result["parts"]["tests"]["result"]
    assert tests["counts"]["passed"] >= 1 and tests["counts"]["failed"] == 0
    markdown = (out / "gpu_check.md").read_text()
    assert "| pruning: OraRL pruning" in markdown and "Travel: tree" in markdown
    assert result["doctor"]["packages"] and result["travel"]["fits"]


@pytest.mark.slow
def test_pruning_part_updates_4_of_9_vs_9_vs_8_rows(report):
    pruning = report[0]["parts"]["pruning"]["result"]
    assert {k: v["rows"] for k, v in pruning["rows"].items()} == {
        "orarl_pruned": 4,
        "unpruned": 9,
        "grpo": 8,
    }
    assert all(s > 0 for s in pruning["median_seconds"].values())
    assert pruning["ratios"]["update_speedup_vs_unpruned"] > 0


@pytest.mark.slow
def test_mfu_generation_and_step_parts_measure(report):
    parts = report[0]["parts"]
    mfu = parts["mfu"]["result"]
    assert mfu["flops"]["total"] > mfu["flops"]["dense"] > 0 and mfu["model"]["packed_rows"]
    assert mfu["best"]["tokens_per_s"] > 0
    generation = parts["generation"]["result"]
    for run in generation["runs"].values():  # end-of-sequence disabled: every sample runs out
        assert run["tokens"] == generation["n"] * generation["new_tokens"]
    seconds = parts["step"]["result"]["seconds"]
    assert seconds["generate"] > 0 and seconds["update"] > 0 and seconds["other"] >= 0


def test_every_core_requirement_is_on_the_gpu_image_or_travels_as_a_wheel():
    """A new dependency must be added to scripts/gpu_wheels.txt (or be on the image), or the
    GPU check would fail at import on the bare machine."""
    from packaging.utils import canonicalize_name

    from videorl.versions import declared_requirements, in_range

    wheels = {canonicalize_name(line.split("==")[0]) for line in gpu_check.wheel_requirements()}
    image = {canonicalize_name(name): version for name, version in gpu_check.GPU_IMAGE.items()}
    core = {name: spec for name, (spec, extra) in declared_requirements().items() if not extra}
    missing = sorted(set(core) - wheels - set(image))
    assert not missing, f"add {missing} to scripts/gpu_wheels.txt (the GPU image lacks them)"
    for name, version in image.items():  # the image's own versions are supported
        if name in core and version:
            assert in_range(version, core[name]), f"{name} {version} is outside {core[name]}"
    assert not wheels & set(image), "a wheel would replace an image package (one version each)"


def test_a_part_over_its_limit_is_killed_with_its_children(tmp_path):
    log = tmp_path / "log"
    started = time.perf_counter()
    status, _ = gpu_check.run_limited(
        ["bash", "-c", "sleep 30 & sleep 30"], 1.0, log, dict(os.environ)
    )
    assert status == "timeout" and time.perf_counter() - started < 10
    assert gpu_check.run_limited(["false"], 5.0, log, dict(os.environ))[0] == "failed"


def test_a_failed_part_is_reported_and_the_table_still_written(tmp_path):
    report = {
        "started": "now",
        "mode": "cpu --tiny",
        "machine": {"gpus": [], "torch": "x", "transformers": "y"},
        "travel": gpu_check.travel_size(),
        "seconds": 3.0,
        "parts": {
            "tests": {"status": "failed", "seconds": 1.0, "limit_s": 5.0, "result": {}},
            "pruning": {"status": "timeout", "seconds": 2.0, "limit_s": 2.0},
        },
    }
    gpu_check.write_report(tmp_path, report)
    markdown = (tmp_path / "gpu_check.md").read_text()
    assert "| tests: CUDA test subset (tests/gpu) | failed |" in markdown
    assert "| timeout | 2 (2) | - |" in markdown
