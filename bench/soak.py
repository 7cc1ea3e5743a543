"""Soak: a long quickstart-sized run, watched for leaks.

Runs `--steps` (default 2,000) OraRL steps of the quickstart recipe on the tiny model (a
pool of 2 reward worker processes) through `run_training`, and every `--every` (50) steps samples:
resident memory (`/proc/self/statm`, MiB) and its peak (`ru_maxrss`), open file
descriptors (`/proc/self/fd`), live descendant processes (reward workers, fork server), and the mean step
time of the window. A leak is a trend: for each series the least-squares slope per 1,000
steps over the second half of the run (the first half includes warm-up: caches, allocator
pools), and the change from the first to the last sample of that half. Prints the table
and writes `bench/results/soak.json`.

    python bench/soak.py                 # 2,000 steps, ~10 minutes on 2 idle cores
    python bench/soak.py --quick         # 20 steps (a smoke run for the tests)
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from pathlib import Path
from typing import Any

from harness import RunFacts, markdown_table, model_dir, parse_args, recipe, write_results

SERIES = ("rss_mib", "peak_rss_mib", "open_fds", "children", "step_s")


def _descendants() -> int:
    """Live processes below this one (reward workers, the fork server that starts them;
    zombies not counted)."""
    parents: dict[str, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            parents[entry.name] = fields[1]
    below: set[str] = set()
    frontier = {str(os.getpid())}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - below
        below |= frontier
    return len(below)


def sample(step: int, window_s: float, window_steps: int) -> dict[str, float]:
    page = os.sysconf("SC_PAGE_SIZE")
    rss_pages = int(Path("/proc/self/statm").read_text().split()[1])
    return {
        "step": step,
        "rss_mib": rss_pages * page / 2**20,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "open_fds": len(os.listdir("/proc/self/fd")),
        "children": _descendants(),
        "step_s": window_s / max(1, window_steps),
    }


def slope_per_1000(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of ys over xs, per 1,000 steps."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    var = sum((x - mx) ** 2 for x in xs)
    return (
        0.0
        if var == 0
        else 1000 * sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var
    )


def trends(samples: list[dict[str, float]]) -> dict[str, dict[str, float]]:
    """Per series, over the second half of the samples: slope per 1,000 steps, first, last."""
    half = samples[len(samples) // 2 :]
    steps = [s["step"] for s in half]
    return {
        name: {
            "slope_per_1000_steps": round(slope_per_1000(steps, [s[name] for s in half]), 4),
            "first": round(half[0][name], 3),
            "last": round(half[-1][name], 3),
        }
        for name in SERIES
    }


def soak(args: argparse.Namespace) -> dict[str, Any]:
    from videorl.data.synth import write_dataset
    from videorl.trainer.loop import LoopHooks, run_training
    from videorl.trainer.step import train_step

    data = args.work / "soak-data"
    if not (data / "train.jsonl").is_file():
        write_dataset(data, ["temporal_grounding"], n=96, val=0, seed=args.seed, overwrite=True)
    cfg = recipe(
        model_dir(args.work, "tiny"),
        data / "train.jsonl",
        args.work / "soak",
        f"trainer.steps={args.steps}",
        f"trainer.output_dir={args.work / 'soak' / 'train'}",
        "reward.num_workers=2",  # a scoring pool: worker processes to watch
    )
    samples: list[dict[str, float]] = []
    window = {"start": time.perf_counter(), "steps": 0}

    def watched_step(state, indices):
        metrics = train_step(state, indices)
        window["steps"] += 1
        if (state.step + 1) % args.every == 0:
            elapsed = time.perf_counter() - window["start"]
            samples.append(sample(state.step + 1, elapsed, int(window["steps"])))
            window.update(start=time.perf_counter(), steps=0)
        return metrics

    run_training(cfg, overwrite=True, hooks=LoopHooks(step=watched_step))
    return {"steps": args.steps, "every": args.every, "samples": samples, "trends": trends(samples)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--every", type=int, default=50)
    args = parse_args(parser, "soak", argv)
    if args.quick:
        args.steps, args.every = 20, 5
    facts = RunFacts()
    result = soak(args)
    rows = [
        [name, t["first"], t["last"], t["slope_per_1000_steps"]]
        for name, t in result["trends"].items()
    ]
    print(markdown_table(["series (second half)", "first", "last", "slope / 1000 steps"], rows))
    write_results(args.out, {"soak": result, **facts.facts()})


if __name__ == "__main__":
    main()
