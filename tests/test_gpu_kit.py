"""The GPU proof kit cannot rot: `scripts/gpu/check.sh OUT --cpu --tiny` runs every part of
the GPU check end to end on the CPU with tiny models (the tests part on a -k subset of
scripts/gpu/tests, to stay fast), and its report holds each part's measurements; a part that fails
or overruns its limit is recorded without stopping the rest."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts" / "gpu"))

import gpu_check


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> tuple[dict, Path]:
    out, work = tmp_path_factory.mktemp("gpu_out"), tmp_path_factory.mktemp("gpu_work")
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "gpu" / "check.sh"), str(out), "--cpu", "--tiny"]
        + ["--work", str(work), "--tests-k", "sdpa_varlen and qwen2_5_vl"],
        env={**os.environ, "PYTHON": sys.executable, "OMP_NUM_THREADS": "1"},
        capture_output=True,
        text=True,
        timeout=400,  # ~100 s alone on 2 cores (8 part processes): only a hang reaches it
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
    assert "| pruning: OraRL pruning" in markdown and "\ntotal " in markdown
    assert result["doctor"]["packages"]


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
    long_video = parts["long_video"]["result"]
    assert [r["frames"] for r in long_video["runs"]] == [4, 8]
    assert long_video["longest_fit"]["tokens_per_s"] > 0


@pytest.mark.slow
def test_async_part_trains_sync_and_async_through_the_cli(report):
    runs = report[0]["parts"]["async"]["result"]
    assert runs["sync"]["steps_per_s"] > 0 and runs["speedup"] > 0
    stale = runs["async, staleness 1"]
    assert stale["async/staleness_max"] == 1.0 and stale["async/stale_tokens"] > 0


def test_every_core_requirement_is_on_the_gpu_image_or_in_the_wheels_list():
    """A new dependency must be added to scripts/gpu/wheels.txt (or be on the image), or the
    GPU check would fail at import on the bare machine."""
    from packaging.utils import canonicalize_name

    from videorl.versions import declared_requirements, in_range

    wheels = {canonicalize_name(line.split("==")[0]) for line in gpu_check.wheel_requirements()}
    image = {canonicalize_name(name): version for name, version in gpu_check.GPU_IMAGE.items()}
    core = {name: spec for name, (spec, extra) in declared_requirements().items() if not extra}
    missing = sorted(set(core) - wheels - set(image))
    assert not missing, f"add {missing} to scripts/gpu/wheels.txt (the GPU image lacks them)"
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
        "seconds": 3.0,
        "parts": {
            "tests": {"status": "failed", "seconds": 1.0, "limit_s": 5.0, "result": {}},
            "pruning": {"status": "timeout", "seconds": 2.0, "limit_s": 2.0},
        },
    }
    gpu_check.write_report(tmp_path, report)
    markdown = (tmp_path / "gpu_check.md").read_text()
    assert "| tests: CUDA test subset (scripts/gpu/tests) | failed |" in markdown
    assert "| timeout | 2 (2) | - |" in markdown


def _long_video(tmp_path: Path, **changes) -> dict:
    """Part 6 in this process on the tiny Qwen3-VL (frames 4, 8), its recorded results."""
    settings = gpu_check.gpu_parts.replace(gpu_check.gpu_parts.Settings.cpu_tiny(), **changes)
    recorder = gpu_check.gpu_parts.Recorder(tmp_path / "parts" / "long_video.json")
    gpu_check.gpu_parts.part_long_video(settings, tmp_path, recorder)
    assert json.loads(recorder.path.read_text()) == json.loads(json.dumps(recorder.data))
    return recorder.data


def test_long_video_part_doubles_the_frames_and_reports_mfu_both_ways(tmp_path):
    result = _long_video(tmp_path)
    runs = result["runs"]
    assert [r["frames"] for r in runs] == [4, 8] and all(r["status"] == "ok" for r in runs)
    assert runs[1]["visual_tokens"] == 2 * runs[0]["visual_tokens"] > 0
    assert runs[1]["tokens"] > runs[0]["tokens"] > result["response_tokens"]
    measured = result["peak_flops"]["measured_matmul"]["flops_per_s"]
    assert measured > 0 and "verl" in result["flops_convention"]
    text = _tiny_text_config()
    for run in runs:
        assert run["tokens_per_s"] == pytest.approx(run["tokens"] / run["seconds"], rel=0.02)
        flops = gpu_check.gpu_parts.verl_flops(text, [run["tokens"]])["total"]
        achieved = flops / run["seconds"]
        assert run["mfu_spec"] == pytest.approx(achieved / 989e12, rel=0.02)
        assert run["mfu_measured"] == pytest.approx(achieved / measured, rel=0.02)
    assert result["longest_fit"] == runs[-1] and result["stopped_by"] == "the frame cap (8)"
    assert result["sequence_parallel_size"] == 1 and result["model"]["model_type"] == "qwen3_vl"
    assert gpu_check.headline("long_video", result).startswith("S=1 longest 8 frames")


def _tiny_text_config():
    from videorl.models.tiny import make_model

    return make_model("qwen3_vl", "tiny")[0].config.get_text_config()


def test_out_of_memory_ends_the_doubling_at_the_longest_row_that_fitted(tmp_path, monkeypatch):
    real = gpu_check.gpu_parts.timed_update

    def small_memory(loaded, optimizer, batch, settings, budget):
        if batch.row_prompts()[0].vision["video_grid_thw"][0, 0] > 2:  # more than 4 frames
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (simulated)")
        return real(loaded, optimizer, batch, settings, budget)

    monkeypatch.setattr(gpu_check.gpu_parts, "timed_update", small_memory)
    result = _long_video(tmp_path, long_frames=(4, 32))
    assert [(r["frames"], r["status"]) for r in result["runs"]] == [(4, "ok"), (8, "out of memory")]
    assert result["longest_fit"]["frames"] == 4
    assert result["stopped_by"] == "out of memory at 8 frames"


def test_the_time_budget_stops_the_doubling(tmp_path):
    result = _long_video(tmp_path, long_budget_s=0.0)
    assert [r["frames"] for r in result["runs"]] == [4]
    assert result["stopped_by"].startswith("the time budget: 8 frames predicted to take")


def test_verl_flops_is_6_n_t_plus_12_l_h_dh_s_squared():
    import types

    text = types.SimpleNamespace(
        hidden_size=4,
        intermediate_size=8,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=3,
        num_hidden_layers=2,
        vocab_size=10,
    )
    flops = gpu_check.gpu_parts.verl_flops(text, [5, 7])
    # N = 2 layers x (3*4*8 + 4*(2*2 + 2*1)*3) + 2*10*4 = 2 x (96 + 72) + 80 = 416
    assert flops["dense_params"] == 416
    assert flops["dense"] == 6 * 416 * 12
    assert flops["attention"] == 12 * 2 * 2 * 3 * (25 + 49)
    assert flops["total"] == flops["dense"] + flops["attention"]
    del text.head_dim  # verl's default: hidden / heads
    assert gpu_check.gpu_parts.verl_flops(text, [1])["attention"] == 12 * 2 * 2 * 2


def test_the_memory_line_runs_through_the_last_two_rows():
    runs = [
        {"tokens": 500, "peak_gb": 1.0},
        {"tokens": 1000, "peak_gb": 10.0},
        {"tokens": 3000, "peak_gb": 14.0},
    ]
    line = gpu_check.gpu_parts.bytes_per_token(runs)
    assert line["gb_at_zero_tokens"] == 8.0
    assert line["kb_per_token"] == pytest.approx(0.002 * 2**20, abs=0.1)
    assert gpu_check.gpu_parts.bytes_per_token(runs[:1]) is None
