"""The quickstart's claim over seeds: does OraRL raise the video gain over its SFT start?

For each seed, the quickstart's pipeline with that seed everywhere (`make-tiny
--vision-warmup 150 --seed S`, `synth --seed S --tg-grid 1` with 256 training and 32
validation videos, 1600 steps of `videorl sft sft_quickstart`, `videorl train quickstart`),
then the SFT and the SFT + OraRL models evaluated greedily on real, frozen, reversed and
shuffled videos.
Writes bench/results/NAME.json and prints the table; `--write` puts the saved table of the
quickstart's current recipe (`README_STUDY`, the thread-count study below) in README.md.

The thread-count study (docs/lab/models-that-see.md, section 12): `--threads 1,2` runs each
seed's whole pipeline under each `OMP_NUM_THREADS` (the warm-up, SFT and eval all depend on
float order), `--sft-set KEY=VALUE` changes the SFT recipe (repeatable), `--steps 0` stops
after SFT, `--jobs 2` runs two cells side by side (a cell's numbers depend on its own thread
count, not on the load), and `--name` names the results file (bench/results/NAME.json).

    PYTHONPATH=src python bench/seeds.py [--seeds 0,1,2] [--sft-steps 1600] [--steps 150]
    PYTHONPATH=src python bench/seeds.py --name seeds_cosine --seeds 0 --threads 1,2 --steps 0 \
        --sft-set optim.schedule=cosine --sft-set optim.min_lr_ratio=0.1 --jobs 2
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import child_threads, videorl, write_marked
from learning import (
    CONTROLS,
    FAMILY,
    RECIPES,
    RESULTS,
    ROOT,
    evaluate,
    prepare,
    start_overrides,
    train,
)

WORK = Path("runs/bench-seeds")
README_STUDY = "seeds_grid1_s1600_rl3e-4"  # the quickstart's recipe over seeds x threads
COMMON_SEED = 1000  # the shared validation set's synth seed: no training set is drawn with it


def common_val(count: int, work: Path = WORK) -> str:
    """`count` validation videos of the quickstart's task, one set for every cell (made once)."""
    out = work / f"common-val-{count}"
    if not (out / "val.jsonl").is_file():
        videorl(
            "synth", "--out", out, "--families", FAMILY, "--tg-events", "appear",
            "--n", 1, "--val", count, "--seed", COMMON_SEED, "--overwrite",
        )  # fmt: skip
    return str(out / "val.jsonl")


@dataclass(frozen=True)
class Study:
    """One study's settings: `name` names its results file and its RL runs; the SFT models are
    `sft_name`'s (default: its own), so an RL variant reuses another study's SFT cells."""

    name: str = "seeds"
    sft_name: str | None = None
    sft_steps: int = 1600
    steps: int = 150  # OraRL steps; 0: SFT only
    sft_set: tuple[str, ...] = ()
    rl_set: tuple[str, ...] = ()
    val: str | None = None  # None: each seed's own validation videos
    train_videos: int = 256
    work: Path = WORK  # models, data and runs of every cell (a new generator: a new folder)
    tg_grid: float = 1.0  # `synth --tg-grid`: the event bounds' grid in seconds

    def tag(self, name: str) -> str:
        return "" if name == "seeds" else f"-{name}"


def one_seed(seed: int, threads: int | None, study: Study) -> dict[str, Any]:
    """SFT (sft_quickstart with `sft_set`) then OraRL (quickstart with `rl_set`) with `seed`,
    every command under OMP_NUM_THREADS=`threads` (None: inherited); the models' scores on
    the study's validation videos."""
    cell = f"seed-{seed}" if threads is None else f"seed-{seed}-t{threads}"
    work = study.work / cell
    sft_tag, rl_tag = study.tag(study.sft_name or study.name), study.tag(study.name)
    with child_threads(threads):
        start = prepare(
            work,
            seed,
            study.sft_steps,
            study.train_videos,
            sft_overrides=study.sft_set,
            tag=sft_tag,
            tg_grid=study.tg_grid,
        )
        where = "" if study.val is None else f"-{Path(study.val).parent.name}"  # evals apart
        val = study.val or start["val"]
        # a cell's SFT model is reused when there (prepare), and so is its eval
        sft = evaluate(start["model"], val, work / f"eval-sft{sft_tag}{where}", reuse=bool(threads))
        row = {"seed": seed, "sft": sft}
        if threads is not None:
            row |= {"threads": threads, "sft_minutes": start["sft_minutes"]}
            row["sft_curve"] = sft_curve(Path(start["model"]).parent)
        if study.steps:
            overrides = [*start_overrides(start, seed), *RECIPES["orarl"], *study.rl_set]
            run = train(f"orarl{rl_tag}", overrides, study.steps, study.steps, work=work)
            final = Path(run["out"]) / "final"
            row["orarl"] = evaluate(final, val, work / f"eval-orarl{rl_tag}{where}")
    return row


def sft_curve(run: Path, window: int = 50) -> dict[str, float]:
    """The SFT run's answer loss over its first and last `window` steps, and the share of steps
    whose gradient norm was clipped (above optim.grad_clip, 1.0 in sft_quickstart)."""
    from videorl.trainer.metrics import read_metrics

    rows = read_metrics(run / "metrics.jsonl")
    loss = [r["sft/loss"] for r in rows if "sft/loss" in r]
    norms = [r["sft/grad_norm"] for r in rows if "sft/grad_norm" in r]
    return {
        "loss_first": statistics.fmean(loss[:window]),
        "loss_last": statistics.fmean(loss[-window:]),
        "clipped_share": sum(n > 1.0 for n in norms) / len(norms),
    }


def markdown(rows: list[dict[str, Any]]) -> str:
    """One line per seed and a mean line: mIoU and gains, SFT -> SFT + OraRL."""
    keys = ["mIoU", *(f"gain_{c}" for c in CONTROLS)]
    head = " | ".join(k.replace("gain_", "gain vs ") for k in keys)
    lines = [f"| seed | {head} |", "|---" * (len(keys) + 1) + "|"]
    for row in [*rows, _mean(rows)]:
        cells = " | ".join(f"{row['sft'][k]:.1f} -> {row['orarl'][k]:.1f}" for k in keys)
        lines.append(f"| {row['seed']} | {cells} |")
    return "\n".join(lines)


def threads_markdown(rows: list[dict[str, Any]]) -> str:
    """The thread-count study: one line per (seed, threads) cell, SFT -> SFT + OraRL where
    OraRL ran (mIoU and gains), then the spread of the last model's mIoU over the cells."""
    last = "orarl" if all("orarl" in row for row in rows) else "sft"
    keys = ("mIoU", "gain_frozen", "gain_reversed")

    def cell(row: dict[str, Any], key: str) -> str:
        text = f"{row['sft'][key]:.1f}"
        return text + (f" -> {row['orarl'][key]:.1f}" if last == "orarl" else "")

    lines = [
        "| seed | threads | mIoU | gain vs frozen | gain vs reversed | SFT loss, last 50 steps |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        cells = " | ".join(cell(row, key) for key in keys)
        lines.append(
            f"| {row['seed']} | {row['threads']} | {cells} | {row['sft_curve']['loss_last']:.3f} |"
        )
    scores = [row[last]["mIoU"] for row in rows]
    model = "SFT + OraRL" if last == "orarl" else "SFT"
    lines.append(f"\n{model} mIoU spread over {len(rows)} cells: {max(scores) - min(scores):.1f}")
    return "\n".join(lines)


def readme_table() -> str:
    """The README's table: the saved study of the quickstart's current SFT recipe."""
    rows = json.loads((RESULTS / f"{README_STUDY}.json").read_text())["rows"]
    return threads_markdown(rows) if "threads" in rows[0] else markdown(rows)


def _mean(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "seed": "mean",
        **{
            model: {k: statistics.fmean(r[model][k] for r in rows) for k in rows[0][model]}
            for model in ("sft", "orarl")
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--sft-steps", type=int, default=1600)
    parser.add_argument("--steps", type=int, default=150, help="OraRL steps; 0: SFT only")
    parser.add_argument("--threads", help="comma-separated OMP_NUM_THREADS, one cell each")
    parser.add_argument(
        "--sft-set", action="append", default=[], metavar="KEY=VALUE", help="SFT recipe override"
    )
    parser.add_argument(
        "--rl-set", action="append", default=[], metavar="KEY=VALUE", help="OraRL recipe override"
    )
    parser.add_argument("--work", type=Path, default=WORK, help=f"cells' folder (default {WORK})")
    parser.add_argument("--sft-name", help="reuse this study's SFT models (its --name)")
    parser.add_argument(
        "--train-videos", type=int, default=256, help="training videos per seed (quickstart: 256)"
    )
    parser.add_argument(
        "--tg-grid",
        type=float,
        default=1.0,
        help="synth --tg-grid: the event bounds' grid in seconds (studies whose command has no"
        " --tg-grid ran on 0.5 s, before 2026-12-07's seeds_grid1)",
    )
    parser.add_argument("--jobs", type=int, default=1, help="cells run side by side")
    parser.add_argument("--name", default="seeds", help="bench/results/NAME.json")
    parser.add_argument(
        "--common-val",
        type=int,
        default=0,
        help="score every cell on one shared set of this many validation videos (synth seed"
        f" {COMMON_SEED}) instead of its seed's own 32: the spread is then the models' alone",
    )
    parser.add_argument("--quick", action="store_true", help="a smoke run: 20 SFT, 4 RL steps")
    parser.add_argument(
        "--write", action="store_true", help=f"put {README_STUDY}.json's table in README.md"
    )
    args = parser.parse_args()
    if args.write:
        write_marked(ROOT / "README.md", "bench/seeds.py", readme_table())
        return
    sft_steps, steps = (20, min(args.steps, 4)) if args.quick else (args.sft_steps, args.steps)
    threads = [int(t) for t in args.threads.split(",")] if args.threads else [None]
    # one thread count after the other, so a study stopped early has every seed on the first
    cells = [(int(s), t) for t in threads for s in args.seeds.split(",")]
    name = f"{args.name}_quick" if args.quick else args.name
    command = f"PYTHONPATH=src python bench/seeds.py --seeds {args.seeds}" + (
        " --quick" if args.quick else f" --sft-steps {sft_steps} --steps {steps}"
    )
    if args.threads:
        command += f" --threads {args.threads} --jobs {args.jobs}"
    command += "".join(f" --sft-set {kv}" for kv in args.sft_set)
    command += "".join(f" --rl-set {kv}" for kv in args.rl_set)
    if args.sft_name:
        command += f" --sft-name {args.sft_name}"
    if args.work != WORK:
        command += f" --work {args.work}"
    if args.train_videos != 256:
        command += f" --train-videos {args.train_videos}"
    command += f" --tg-grid {args.tg_grid:g}"
    if args.name != "seeds":
        command += f" --name {args.name}"
    val = common_val(args.common_val, args.work) if args.common_val else None
    if args.common_val:
        command += f" --common-val {args.common_val}"
    head = {
        "command": command,
        "machine": platform.platform(),
        **({"sft_set": args.sft_set} if args.sft_set else {}),
        **({"rl_set": args.rl_set} if args.rl_set else {}),
    }

    study = Study(
        args.name, args.sft_name, sft_steps, steps, tuple(args.sft_set), tuple(args.rl_set), val,
        args.train_videos, args.work, args.tg_grid,
    )  # fmt: skip

    def cell_row(cell: tuple[int, int | None]) -> dict[str, Any]:
        return one_seed(*cell, study)

    RESULTS.mkdir(exist_ok=True)
    done: dict[tuple[int, int | None], dict[str, Any]] = {}
    with ThreadPoolExecutor(args.jobs) as pool:
        futures = {pool.submit(cell_row, cell): cell for cell in cells}
        for future in as_completed(futures):  # saved as each cell ends: a stopped study keeps them
            done[futures[future]] = future.result()
            rows = [done[cell] for cell in cells if cell in done]
            payload = {**head, "cells": len(cells), "rows": rows}
            (RESULTS / f"{name}.json").write_text(json.dumps(payload, indent=1))
    print(threads_markdown(rows) if args.threads else markdown(rows))


if __name__ == "__main__":
    main()
