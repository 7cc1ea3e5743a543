"""Threads on a shared CPU: the quickstart's training, idle, after a busy minute, under load.

The trainer's default (`trainer/threads.py`) is the process's cores divided among local
ranks. An earlier rule subtracted the 1-minute load average; this bench times the
quickstart's two training commands (`videorl sft sft_quickstart`, `videorl train
quickstart`, their own step counts unless `--sft-steps`/`--train-steps`) in subprocesses:

- `idle`: nothing else running, the default rule;
- `after busy minute`: `--busy-s` (60) seconds of one busy process per core first, stopped
  before the run starts (the load average is high, the cores are free), with the default
  rule and with the old rule's choice (`round(cores - load)` threads, at least 1);
- `sustained load`: one busy process for the whole run, with the default rule and with 1
  thread (what `trainer.cpu_threads=1` gives).

Prints the table and writes `bench/results/threads.json`.

    python bench/threads.py              # ~15 minutes on 2 cores
    python bench/threads.py --cases idle # measure one case again, keep the other rows
    python bench/threads.py --quick      # 3 + 2 steps, 2 s busy, in this process: a smoke run
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import harness
from harness import markdown_table, parse_args, write_results

CASES = {
    "idle": "idle",
    "after_busy": "after a busy minute",
    "sustained": "sustained load (1 busy process)",
}


def _spin() -> None:
    while True:
        pass


@contextmanager
def busy(processes: int) -> Iterator[None]:
    """`processes` busy-looping processes for the duration of the block."""
    spinners = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(processes)]
    for spinner in spinners:
        spinner.start()
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.terminate()
            spinner.join()


def old_rule(cores: int) -> int:
    """The earlier default: the cores not busy by the 1-minute load average."""
    return max(1, min(cores, round(cores - os.getloadavg()[0])))


def prepare(work: Path) -> None:
    """The quickstart's model and data under `work` (built once)."""
    if (work / "data" / "val.jsonl").exists():
        return
    harness.videorl("make-tiny", work / "model", "--arch", "qwen2_5_vl")
    harness.videorl(
        *["synth", "--out", work / "data", "--families", "temporal_grounding"],
        *["--n", "96", "--seed", "0", "--val", "32"],
    )


def training_s(work: Path, threads: int | None, args: argparse.Namespace) -> float:
    """Wall seconds of the quickstart's SFT then OraRL commands; `threads` None = default."""
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    data = [f"data.train={work}/data/train.jsonl", f"data.val={work}/data/val.jsonl"]
    pinned = [f"trainer.cpu_threads={threads}"] if threads else []
    sft = [f"trainer.steps={args.sft_steps}"] if args.sft_steps else []
    train = [f"trainer.steps={args.train_steps}"] if args.train_steps else []
    commands = [
        ["sft", "sft_quickstart", f"model.path={work}/model", f"trainer.output_dir={work}/sft"]
        + sft,
        ["train", "quickstart", f"model.path={work}/sft/final", f"trainer.output_dir={work}/train"]
        + train,
    ]
    return sum(
        harness.videorl_at_root(*command, "--overwrite", *data, *pinned, env=env)
        for command in commands
    )


def measure(args: argparse.Namespace, cores: int) -> list[dict[str, Any]]:
    rows = []

    def row(case: str, rule: str, threads: int | None, load_now: bool = False) -> None:
        load = round(os.getloadavg()[0], 2)
        context = busy(1) if load_now else _nothing()
        with context:
            seconds = training_s(args.work, threads, args)
        rows.append(
            {"case": case, "rule": rule, "threads": threads or cores, "load_at_start": load}
            | {"seconds": round(seconds, 1)}
        )
        print(rows[-1], flush=True)

    if "idle" in args.cases:
        row("idle", "cores / ranks (default)", None)
    for rule in ("cores / ranks (default)", "old: cores - load average"):
        if "after_busy" in args.cases:
            with busy(cores):
                time.sleep(args.busy_s)
            threads = old_rule(cores) if rule.startswith("old") else None
            row("after a busy minute", rule, threads)
    if "sustained" in args.cases:
        row("sustained load (1 busy process)", "cores / ranks (default)", None, load_now=True)
        row("sustained load (1 busy process)", "trainer.cpu_threads=1", 1, load_now=True)
    return rows


def merged(path: Path, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`rows` in place of the earlier results' rows of the same cases (a `--cases` rerun)."""
    if not path.exists():
        return rows
    measured = {r["case"] for r in rows}
    earlier = [r for r in json.loads(path.read_text())["rows"] if r["case"] not in measured]
    order = [CASES[key] for key in CASES]
    return sorted(earlier + rows, key=lambda r: order.index(r["case"]))


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--busy-s", type=float, default=60.0)
    parser.add_argument("--sft-steps", type=int, default=0, help="0: the recipe's")
    parser.add_argument("--train-steps", type=int, default=0, help="0: the recipe's")
    parser.add_argument(
        "--cases",
        type=lambda text: text.split(","),
        default=list(CASES),
        help="comma list of idle,after_busy,sustained; rows of others are kept from --out",
    )
    args = parse_args(parser, "threads", argv)
    if args.quick:  # every command in this process: no interpreter start-up per command
        harness.IN_PROCESS = True
        args.busy_s, args.sft_steps, args.train_steps = 2.0, 3, 2
    args.work = args.work / "threads"
    prepare(args.work)
    cores = len(os.sched_getaffinity(0))
    rows = measure(args, cores)
    if not args.quick:
        rows = merged(args.out, rows)
    idle = rows[0]["seconds"]
    print(
        markdown_table(
            ["case", "rule", "threads", "load avg at start", "seconds", "x idle"],
            [
                [r["case"], r["rule"], r["threads"], r["load_at_start"], r["seconds"]]
                + [f"{r['seconds'] / idle:.2f}"]
                for r in rows
            ],
        )
    )
    payload = {"cores": cores, "busy_s": args.busy_s, "rows": rows}
    payload |= {
        "sft_steps": args.sft_steps or "recipe",
        "train_steps": args.train_steps or "recipe",
    }
    if not args.quick:
        write_results(args.out, payload)
    return payload


if __name__ == "__main__":
    main()
