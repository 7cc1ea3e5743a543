"""The first table of docs/performance.md, from the results files (run after the benchmarks).

python bench/table.py [--results bench/results]    # print it
python bench/table.py --write                      # replace it in docs/performance.md

The page holds the table between this script's markers (`harness.write_marked`); a test
checks that it is what this script makes from the committed results.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import harness

PAGE = harness.ROOT / "docs" / "performance.md"
SCRIPT = "bench/table.py"


def _load(folder: Path, name: str) -> dict[str, Any] | None:
    path = folder / f"{name}.json"
    return json.loads(path.read_text()) if path.is_file() else None


def _pct(value: float) -> str:
    return f"{100 * value:.0f}%"


def _faster_steps_row(step: dict[str, Any]) -> list[str]:
    """Issue 19: shared prefill + each video encoded once, against the old path."""
    ratios, paths = step["ratios"], step["paths"]
    old, new = paths["old"]["share"]["cpu"], paths["new"]["share"]["cpu"]
    towers = {k: v["vision_tower_videos_per_distinct_video"]["median"] for k, v in paths.items()}
    same = step["same_outputs"]
    return [
        "Shared prefill + each video encoded once + one prompt forward per group (vs "
        + "`rollout.share_prefill=false model.reuse_visual_embeddings=false "
        + "model.share_prompt_forward=false`)",
        (
            f"whole step {harness.fmt(ratios['cpu']['step'], 'x')} faster in CPU time, "
            f"{harness.fmt(ratios['wall']['step'], 'x')} in wall time; generation "
            f"{harness.fmt(ratios['cpu']['generate'], 'x')}, old log-probs "
            f"{harness.fmt(ratios['cpu']['old_logprobs'], 'x')}, update "
            f"{harness.fmt(ratios['cpu']['update'], 'x')}; prompt prefill {_pct(old['generate_prefill']['median'])} "
            f"-> {_pct(new['generate_prefill']['median'])} of the step; vision tower "
            f"{towers['old']:.0f} -> {towers['new']:.0f} encodings per distinct video; same outputs "
            f"(max |diff| {same['max_metric_diff']:.1g} in rewards/losses, {same['max_weight_diff']:.1g} in weights)"
        ),
        "bench/step.py",
    ]


def rows(folder: Path) -> list[list[str]]:
    out = []
    pruning = _load(folder, "pruning")
    if pruning:
        one, two = (
            pruning["time"]["one_mini_batch"]["cpu"],
            pruning["time"]["two_mini_batches"]["cpu"],
        )
        memory = pruning["memory"]
        out.append(
            [
                "OraRL pruning (4 of 9 rows per group): update time",
                (
                    f"CPU time {harness.fmt(one['speedup_vs_unpruned'], 'x')} lower than 9 of 9 rows with one mini-batch, "
                    f"{harness.fmt(two['speedup_vs_unpruned'], 'x')} with two (old log-probs computed); "
                    f"{harness.fmt(one['speedup_vs_grpo'], 'x')} / {harness.fmt(two['speedup_vs_grpo'], 'x')} lower than "
                    f"GRPO's 8 rows ({pruning['model']['params_m']:.0f} M-param model; published: 1.48x per step, 4B)"
                ),
                "bench/pruning.py",
            ]
        )
        out.append(
            [
                "OraRL pruning: peak memory of the update",
                (
                    f"peak RSS {_pct(memory['one_mini_batch']['peak_reduction_vs_unpruned'])} lower than 9 of 9 rows "
                    f"(one mini-batch), {_pct(memory['two_mini_batches']['peak_reduction_vs_unpruned'])} (two); memory the "
                    f"update adds {_pct(memory['one_mini_batch']['added_reduction_vs_unpruned'])} / "
                    f"{_pct(memory['two_mini_batches']['added_reduction_vs_unpruned'])} lower (published: 18% less peak, 4B)"
                ),
                "bench/pruning.py",
            ]
        )
    packing = _load(folder, "packing")
    if packing:
        results = packing["results"]
        base = results["padded"]["seconds"]["median"]
        parts = [
            f"{name}: {base / r['seconds']['median']:.2f}x"
            for name, r in results.items()
            if name != "padded"
        ]
        padding = results["padded"]["tokens_computed"] / results["padded"]["real_tokens"] - 1
        out.append(
            [
                "Padding-free packed rows: update forward + backward",
                (
                    f"speed vs padded micro-batches ({_pct(padding)} padding; {packing['rows']} video rows, "
                    f"{packing['budget']}-token budget, {packing['device']}): " + ", ".join(parts)
                ),
                "bench/packing.py",
            ]
        )
    step = _load(folder, "step")
    if step:
        share, wall = step["share"]["cpu"], step["share"]["wall"]
        out.append(
            [
                "Framework overhead per step",
                (
                    f"{100 * share['other']['median']:.2f}% of the step's CPU time, {100 * wall['other']['median']:.2f}% of "
                    f"its wall time ({step['seconds']['wall']['step']['median']:.1f} s; target < 10%). CPU time: generation "
                    f"{_pct(share['generate']['median'])} (prompt prefill {_pct(share['generate_prefill']['median'])}), "
                    f"old log-probs {_pct(share['old_logprobs']['median'])}, update {_pct(share['update']['median'])}, "
                    f"decoding + prompt encoding {100 * (share['decode']['median'] + share['encode']['median']):.1f}%"
                ),
                "bench/step.py",
            ]
        )
        if "ratios" in step:
            out.append(_faster_steps_row(step))
    video = _load(folder, "video")
    if video:
        once = video["decode_once"]
        out.append(
            [
                "Decode once per step",
                "; ".join(
                    f"{r['recipe']}: {r['videorl_decodes_per_video']['median']:.0f} decode per video vs "
                    f"{r['naive_decodes_per_video']['median']:.0f} when decoding at every pass, decode time "
                    f"{harness.fmt(r['decode_time_ratio'], 'x', 1)} lower"
                    for r in once.values()
                ),
                "bench/video.py",
            ]
        )
    convert = _load(folder, "decode_convert")
    if convert:
        out.append(_convert_row(convert["rows"]))
    vs_trl = _load(folder, "vs_trl")
    if vs_trl:
        speed, check = vs_trl["speed"], vs_trl["video_in_loss"]
        versions = vs_trl["versions"]
        if "videorl_over_trl_steps_per_s" in speed:
            ratio = speed["videorl_over_trl_steps_per_s"]
            race = (
                f"{harness.fmt(ratio['cpu'], 'x')} the steps per second of TRL {versions['trl']} GRPOTrainer in "
                f"CPU time, {harness.fmt(ratio['wall'], 'x')} in wall time (tiny model, image task, same batch, "
                "group, length, optimizer)"
            )
        else:
            race = f"TRL: {vs_trl['trl_status']}"
        out.append(["Speed against a peer trainer", race, "bench/vs_trl.py"])
        loss = "; ".join(
            f"{name}: {'yes' if v['loss_forward_gets_video'] else 'no'}"
            for name, v in check.items()
        )
        out.append(["Loss forward gets the video tensors (video task)", loss, "bench/vs_trl.py"])
    rewards = _load(folder, "rewards")
    if rewards:
        rates = {k: v["single_core_per_s"] for k, v in rewards["families"].items()}
        slowest = min((k for k in rates if k != "math"), key=lambda k: rates[k])
        out.append(
            [
                "Reward scoring, one core",
                (
                    f"{rates[slowest]:,.0f}/s ({slowest}, the slowest video family) to "
                    f"{max(rates.values()):,.0f}/s; math (sympy) {rates.get('math', 0):,.0f}/s"
                ),
                "bench/rewards.py",
            ]
        )
    soak = _load(folder, "soak")
    if soak:
        out.append(_soak_row(soak["soak"]))
    threads = _load(folder, "threads")
    if threads:
        out.append(_threads_row(threads["rows"]))
    return out


def _convert_row(rows: list[dict[str, Any]]) -> list[str]:
    """Frames to RGB in the reader's loop: one reformatter per file vs PyAV's per-frame one."""
    sizes = "; ".join(
        f"{r['size']} {r['content']} {r['speedup']:.1f}x ({r['per_frame_ms']:.2f} -> "
        f"{r['one_reformatter_ms']:.2f} ms)"
        for r in rows
    )
    same = "same pixels" if all(r["same_pixels"] for r in rows) else "PIXELS DIFFER"
    return [
        "Decoded frames to RGB: one reformatter per file vs `frame.to_ndarray` per frame",
        f"decode + convert, ms per frame: {sizes}; {same}",
        "bench/decode_convert.py",
    ]


def _threads_row(rows: list[dict[str, Any]]) -> list[str]:
    """Issue 29: the trainer's thread rule against the old load-average rule and under load."""
    seconds = {(r["case"], r["threads"]): r["seconds"] for r in rows}
    after, held = "after a busy minute", "sustained load (1 busy process)"
    return [
        "CPU threads = the process's cores / local ranks (quickstart SFT + OraRL training)",
        (
            f"idle {seconds[('idle', 2)]:.1f} s; right after a busy minute {seconds[(after, 2)]:.1f} s "
            f"with 2 threads vs {seconds[(after, 1)]:.1f} s with the old load-average rule's 1; "
            f"one other busy process throughout: {seconds[(held, 2)]:.1f} s with 2 threads, "
            f"{seconds[(held, 1)]:.1f} s with `trainer.cpu_threads=1`"
        ),
        "bench/threads.py",
    ]


def table(folder: Path) -> str:
    return harness.markdown_table(
        ["claim", "measured: median (min-max over repeats)", "script"], rows(folder)
    )


def _soak_row(soak: dict[str, Any]) -> list[str]:
    """Issue 29: the second half's first -> last sample and slope per 1,000 steps."""
    t = soak["trends"]

    def series(name: str, unit: str) -> str:
        one = t[name]
        return (
            f"{one['first']:g} -> {one['last']:g}{unit} "
            f"({one['slope_per_1000_steps']:+g}{unit} per 1,000 steps)"
        )

    return [
        f"No leak over a long run ({soak['steps']:,} quickstart steps, 2 reward workers)",
        (
            f"second half: resident memory {series('rss_mib', ' MiB')}, open descriptors "
            f"{series('open_fds', '')}, processes {series('children', '')}, step time "
            f"{series('step_s', ' s')}"
        ),
        "bench/soak.py",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=harness.RESULTS)
    parser.add_argument("--write", action="store_true", help=f"replace the table in {PAGE}")
    args = parser.parse_args()
    if args.write:
        harness.write_marked(PAGE, SCRIPT, table(args.results))
    else:
        print(table(args.results))


if __name__ == "__main__":
    main()
