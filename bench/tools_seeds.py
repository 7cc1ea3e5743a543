"""The tools quickstart as a new user meets it: a fresh clone per seed, `videorl quickstart
--tools --seed S` in it, and what it gives.

For each seed S: `git clone` of this repository's committed HEAD into `WORK/seed-S` (nothing
reused from earlier runs or from this checkout's `runs/`), then the whole tools quickstart there
under OMP_NUM_THREADS=`--threads` (1, as `make tools-quickstart` sets), this interpreter, the
clone's `src/`. Read back: the greedy mIoU with tools on the real, frozen and reversed videos
(`runs/tools_quickstart/eval/metrics.json`), the gain against each control, and the calls per row
and policy reward over the first and last `--window` GRPO steps (`train/metrics.jsonl`).
`--collect` only reads clones that ran. Writes bench/results/tools_seeds.json (rows of seeds not
run this time stay as they were; each row names its clone's commit), prints the table;
`--write` puts it in docs/tools.md.

    PYTHONPATH=src python bench/tools_seeds.py [--seeds 0,1,2] [--threads 1] [--collect] [--write]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from harness import markdown_table, mean_present, write_marked, write_results

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "runs" / "bench-tools-seeds"
OUT = ROOT / "bench" / "results" / "tools_seeds.json"
PAGE = ROOT / "docs" / "tools.md"
RUN = Path("runs/tools_quickstart")  # inside each clone
FAMILY = "temporal_grounding"
CONTROLS = ("frozen", "reversed")


def fresh_clone(clone: Path) -> Path:
    """A clone of HEAD in `clone`; refuses to reuse a folder (a clone holds a run's outputs)."""
    if clone.exists():
        raise SystemExit(f"error: {clone} exists; remove it or pass --collect to read it")
    clone.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    return clone


def run_quickstart(clone: Path, seed: int, threads: int) -> float:
    """`videorl quickstart --tools --seed S` inside `clone`; its log in `clone/quickstart.log`."""
    env = {
        **os.environ,
        "PYTHONPATH": str(clone / "src"),
        "OMP_NUM_THREADS": str(threads),
        "OMP_WAIT_POLICY": "PASSIVE",
    }
    start = time.perf_counter()
    with open(clone / "quickstart.log", "w") as log:
        argv = [sys.executable, "-m", "videorl", "quickstart", "--tools", "--seed", str(seed)]
        subprocess.run(argv, cwd=clone, env=env, stdout=log, stderr=subprocess.STDOUT, check=True)
    seconds = time.perf_counter() - start
    (clone / "seconds.txt").write_text(f"{seconds:.1f}\n")
    return seconds


def read_row(clone: Path, seed: int, window: int) -> dict[str, Any]:
    """One seed's eval scores and GRPO curves, as its clone's files hold them."""
    from videorl.trainer.metrics import read_metrics

    metrics = json.loads((clone / RUN / "eval" / "metrics.json").read_text())
    real = metrics["tools"]["with_tools"][FAMILY]["mIoU"]
    row: dict[str, Any] = {"seed": seed, "mIoU": real}
    for control in CONTROLS:
        score = metrics["controls"][control]["families"][FAMILY]["mIoU"]
        row |= {control: score, f"gain_{control}": real - score}
    steps = read_metrics(clone / RUN / "train" / "metrics.jsonl")
    calls = [r.get("tools/calls_per_row", 0.0) for r in steps]
    reward = [r["reward/mean"] for r in steps if "reward/mean" in r]
    row |= {
        "calls_first": mean_present(calls[:window]),
        "calls_last": mean_present(calls[-window:]),
        "reward_first": mean_present(reward[:window]),
        "reward_last": mean_present(reward[-window:]),
    }
    timing = clone / "seconds.txt"
    row["minutes"] = float(timing.read_text()) / 60 if timing.is_file() else None
    return row


# (header, row key, format) per column; the window's length goes into the curve headers
COLUMNS = (
    ("seed", "seed", "{}"),
    ("mIoU with tools", "mIoU", "{:.1f}"),
    ("frozen", "frozen", "{:.1f}"),
    ("reversed", "reversed", "{:.1f}"),
    ("gain vs frozen", "gain_frozen", "{:+.1f}"),
    ("gain vs reversed", "gain_reversed", "{:+.1f}"),
    ("calls/row, first {window} GRPO steps", "calls_first", "{:.2f}"),
    ("last {window}", "calls_last", "{:.2f}"),
    ("reward, first", "reward_first", "{:.3f}"),
    ("last", "reward_last", "{:.3f}"),
)


def earlier_rows(path: Path) -> list[dict[str, Any]]:
    """The rows of an earlier results file: seeds run before (their clones may be gone) stay."""
    return json.loads(path.read_text())["rows"] if path.is_file() else []


def clone_commit(clone: Path) -> str:
    """The commit a clone ran (rows of one table may come from different commits)."""
    done = subprocess.run(["git", "-C", str(clone), "rev-parse", "--short", "HEAD"], check=True,
                          capture_output=True, text=True)  # fmt: skip
    return done.stdout.strip()


def table(rows: list[dict[str, Any]], window: int) -> str:
    headers = [header.format(window=window) for header, _, _ in COLUMNS]
    cells = [[spec.format(row[key]) for _, key, spec in COLUMNS] for row in rows]
    return markdown_table(headers, cells)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--window", type=int, default=10)
    parser.add_argument("--work", type=Path, default=WORK)
    parser.add_argument("--collect", action="store_true", help="read clones that already ran")
    parser.add_argument("--write", action="store_true", help="put the table in docs/tools.md")
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    kept = {row["seed"]: row for row in earlier_rows(OUT) if row["seed"] not in seeds}
    for seed in seeds:
        clone = args.work / f"seed-{seed}"
        if not args.collect:
            run_quickstart(fresh_clone(clone), seed, args.threads)
        kept[seed] = read_row(clone, seed, args.window) | {"commit": clone_commit(clone)}
    rows = [kept[seed] for seed in sorted(kept)]
    text = table(rows, args.window)
    print(text)
    command = f"--seeds {args.seeds} --threads {args.threads} --window {args.window}"
    payload = {
        "command": f"PYTHONPATH=src python bench/tools_seeds.py {command}",
        "machine": platform.platform(),
        "window": args.window,
        "rows_kept_from_earlier_runs": sorted(set(kept) - set(seeds)),
        "rows": rows,
    }
    write_results(OUT, payload)
    if args.write:
        write_marked(PAGE, "bench/tools_seeds.py", text)


if __name__ == "__main__":
    main()
