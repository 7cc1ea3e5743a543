"""Each benchmark script runs end to end in `--quick` mode (tiny model, one repeat) and
writes results whose invariants hold: pruning keeps 4 of 9 rows, the step's phases account
for its wall time without overlap, videos are decoded once per step, and videorl's loss
forward gets the video, packed rows compute no padding. The scripts share one Python process (imports are the slow part)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.bench import BENCH, bench_module

SCRIPTS = ("pruning", "step", "video", "vs_trl", "packing", "soak", "decode_convert")
DRIVER = """
import importlib, sys
bench, work, out = sys.argv[1:4]
sys.path.insert(0, bench)
for name in sys.argv[4:]:
    importlib.import_module(name).main(["--quick", "--work", work, "--out", f"{out}/{name}.json"])
"""


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict[str, dict]:
    work, out = tmp_path_factory.mktemp("bench_work"), tmp_path_factory.mktemp("bench_out")
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, str(BENCH), str(work), str(out), *SCRIPTS],
        capture_output=True,
        text=True,
        timeout=300,  # ~50 s alone on 2 cores: only a hang reaches it
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    return {name: json.loads((out / f"{name}.json").read_text()) for name in SCRIPTS}


@pytest.mark.slow
def test_pruning_times_and_measures_the_three_row_sets(results):
    result = results["pruning"]
    groups = result["settings"]["groups"]
    assert {k: v["rows"] for k, v in result["batches"].items()} == {
        "orarl_pruned": 4 * groups,
        "unpruned": 9 * groups,
        "grpo": 8 * groups,
    }
    for mode in ("one_mini_batch", "two_mini_batches"):
        for clock in ("cpu", "wall"):
            assert all(s["median"] > 0 for s in result["time"][mode][clock]["seconds"].values())
    memory = result["memory"]["one_mini_batch"]
    for variant in ("orarl_pruned", "unpruned", "grpo"):
        assert memory[variant]["peak_mb"]["median"] > 0
        assert memory[variant]["added_by_update_mb"]["median"] >= 0


@pytest.mark.slow
def test_step_phases_do_not_overlap(results):
    result = results["step"]
    for clock in ("wall", "cpu"):
        seconds = {k: v["median"] for k, v in result["seconds"][clock].items()}
        assert seconds["other"] >= 0, f"timed phases overlap: their {clock} time exceeds the step's"
        assert seconds["old_logprobs"] > 0  # two mini-batches: the old-log-prob pass runs
        assert seconds["generate"] > 0 and seconds["update"] > 0
    assert result["rows"]["kept"] < result["rows"]["total"]  # the recipe prunes


@pytest.mark.slow
def test_step_compares_old_and_new_paths_side_by_side(results):
    result = results["step"]
    towers = {
        name: path["vision_tower_videos_per_distinct_video"]["median"]
        for name, path in result["paths"].items()
    }
    assert towers["new"] == 1.0 and towers["old"] > 1.0  # frozen tower: one encoding per video
    assert result["ratios"]["cpu"]["step"]["median"] > 0
    prefill = {
        name: p["seconds"]["cpu"]["generate_prefill"]["median"]
        for name, p in result["paths"].items()
    }
    assert prefill["new"] > 0 and result["same_outputs"]["max_metric_diff"] < 1e-4


@pytest.mark.slow
def test_each_video_is_decoded_once_per_step(results):
    once = results["video"]["decode_once"]
    for recipe in once.values():
        assert recipe["videorl_decodes_per_video"]["median"] == 1.0
    # rollout, old log-probs, update; TaRO adds a prefix-continuation and two sensitivity passes
    assert once["orarl"]["naive_decodes_per_video"]["median"] >= 3
    assert (
        once["taro"]["naive_decodes_per_video"]["median"]
        >= once["orarl"]["naive_decodes_per_video"]["median"] + 2
    )
    pyav = results["video"]["throughput"]["backends"]["pyav"]
    assert pyav["installed"] and all(
        pyav[name]["ms_per_video"]["median"] > 0 for name in results["video"]["files"]
    )


@pytest.mark.slow
def test_videorl_loss_forward_gets_the_video(results):
    result = results["vs_trl"]
    ours = result["video_in_loss"]["videorl"]
    assert ours["rollout_forward_gets_video"] and ours["loss_forward_gets_video"]
    assert result["speed"]["videorl"]["cpu"]["steps_per_s"]["median"] > 0
    if result["versions"]["trl_error"] is None:  # TRL installed: its side ran and was recorded
        assert isinstance(result["video_in_loss"]["trl"]["loss_forward_gets_video"], bool)
        assert result["speed"]["trl"]["cpu"]["steps_per_s"]["median"] > 0
    else:
        assert result["trl_status"].startswith("not run")


@pytest.mark.slow
def test_packed_layouts_compute_only_real_tokens(results):
    runs = results["packing"]["results"]
    assert (
        runs["padded"]["tokens_computed"] > runs["padded"]["real_tokens"]
    )  # rows of unequal length
    for name in ("packed-sdpa-mask", "packed-sdpa-varlen"):
        assert (
            runs[name]["tokens_computed"]
            == runs[name]["real_tokens"]
            == runs["padded"]["real_tokens"]
        )
        assert runs[name]["seconds"]["median"] > 0


@pytest.mark.slow
def test_soak_samples_memory_descriptors_and_workers(results):
    soak = results["soak"]["soak"]
    samples = soak["samples"]
    assert [s["step"] for s in samples] == list(range(5, 21, 5))
    assert all(s["children"] >= 1 for s in samples)  # the reward worker
    assert all(s["open_fds"] > 0 and s["rss_mib"] > 0 and s["step_s"] > 0 for s in samples)
    assert set(soak["trends"]) == {"rss_mib", "peak_rss_mib", "open_fds", "children", "step_s"}


def test_soak_slope_is_per_thousand_steps():
    slope_per_1000 = bench_module("soak").slope_per_1000

    assert slope_per_1000([0, 50, 100], [10.0, 10.5, 11.0]) == pytest.approx(10.0)
    assert slope_per_1000([0, 50, 100], [3.0, 3.0, 3.0]) == 0.0


def test_threads_bench_times_the_quickstart_training_and_merges_reruns(tmp_path):
    threads = bench_module("threads")

    run = [sys.executable, str(BENCH / "threads.py"), "--quick", "--cases", "idle"]
    shown = subprocess.run(
        [*run, "--work", str(tmp_path)],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,  # ~16 s alone on 2 cores: only a hang reaches it
    ).stdout
    (row,) = [line for line in shown.splitlines() if line.startswith("| idle |")]
    cores = len(os.sched_getaffinity(0))
    assert row.startswith(f"| idle | cores / ranks (default) | {cores} |")
    earlier = {"rows": [{"case": c, "seconds": 1.0} for c in threads.CASES.values()]}
    results = tmp_path / "threads.json"
    results.write_text(json.dumps(earlier))
    rows = threads.merged(results, [{"case": "idle", "seconds": 2.0}])
    assert [r["seconds"] for r in rows] == [2.0, 1.0, 1.0]
    assert [r["case"] for r in rows] == list(threads.CASES.values())


def test_performance_page_holds_the_table_the_results_make():
    table = bench_module("table")
    committed = table.harness.marked_text(table.PAGE, table.SCRIPT)
    assert committed == table.table(table.harness.RESULTS), "run: python bench/table.py --write"


def test_decode_convert_checks_pixels_before_timing(results):
    rows = results["decode_convert"]["rows"]
    assert {row["content"] for row in rows} == {"flat", "noise"}
    assert all(row["same_pixels"] for row in rows)
    assert all(row["per_frame_ms"] > 0 and row["one_reformatter_ms"] > 0 for row in rows)
