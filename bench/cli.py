"""Start-to-error times of the common user errors, as a newcomer meets them on the CLI.

Each case is one `videorl` command in a fresh process (this interpreter, `OMP_NUM_THREADS=1`,
the working folder `--work`/cli), timed from the start of the process to its exit, `--repeats`
times. Most end in a one-line error with exit code 2; `eval --compare` of two finished evals
is a small job that should be as quick. The table shows the median and the range.

    python bench/cli.py              # 5 repeats per case, ~3 minutes on 2 busy cores
    python bench/cli.py --quick      # 1 repeat: a smoke run for the tests

Writes `bench/results/cli.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from harness import fmt, markdown_table, parse_args, spread, write_results

# name -> (what the user did, the command after `videorl`); {work} and {port} filled in
CASES: dict[str, tuple[str, list[str]]] = {
    "config_key_typo": ("a one-character key typo", ["train", "quickstart", "trainer.stpes=3"]),
    "bad_override": ("an override without =", ["train", "quickstart", "trainer.steps"]),
    "yaml_syntax": ("a YAML syntax error in a recipe file", ["train", "{work}/broken.yaml"]),
    "bad_config_value": ("a value out of range", ["train", "quickstart", "rollout.n=0"]),
    "fresh_folder": ("train quickstart before synth", ["train", "quickstart"]),
    "mistyped_model": (
        "eval --model with a mistyped local path",
        ["eval", "--model", "runs/nope", "--benchmark", "{work}/bench.jsonl"],
    ),
    "busy_port": ("serve on a port in use", ["serve", "--model", "runs/nope", "--port", "{port}"]),
    "eval_compare": ("eval --compare of two metrics.json", ["eval", "--compare", "a", "b"]),
}


def prepare(work: Path) -> None:
    """The inputs the cases read: a broken recipe, a benchmark file, two finished evals."""
    (work / "runs").mkdir(parents=True, exist_ok=True)
    (work / "broken.yaml").write_text("trainer:\n  steps: 3\n   seed: [\n")
    row = {"id": "1", "video": "v.mp4", "duration": 10, "query": "q", "timestamps": [[1, 2]]}
    (work / "bench.jsonl").write_text(json.dumps(row) + "\n")
    for side, miou in (("a", 10.0), ("b", 20.0)):
        (work / side).mkdir(exist_ok=True)
        metrics = {"families": {"temporal_grounding": {"n": 1, "metrics": {"mIoU": miou}}}}
        (work / side / "metrics.json").write_text(json.dumps(metrics))


def run_case(command: list[str], work: Path) -> dict[str, Any]:
    """One run: wall seconds from process start to exit, exit code, first output line."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "COLUMNS": "200"}
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "videorl", *command],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - start
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    return {"seconds": seconds, "code": done.returncode, "first_line": lines[0] if lines else ""}


def measure(work: Path, repeats: int) -> list[dict[str, Any]]:
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    fill = {"work": str(work), "port": str(holder.getsockname()[1])}
    rows = []
    try:
        for name, (what, template) in CASES.items():
            command = [part.format(**fill) for part in template]
            runs = [run_case(command, work) for _ in range(repeats)]
            rows.append(
                {
                    "case": name,
                    "what": what,
                    "command": "videorl " + " ".join(command),
                    "seconds": spread([r["seconds"] for r in runs], digits=2),
                    "exit_code": runs[-1]["code"],
                    "first_line": runs[-1]["first_line"][:300],
                }
            )
            print(f"{name}: {rows[-1]['seconds']['median']:.2f} s, exit {runs[-1]['code']}")
    finally:
        holder.close()
    return rows


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parse_args(parser, "cli", argv)
    repeats = 1 if args.quick else args.repeats
    work = args.work / "cli"
    prepare(work)
    rows = measure(work, repeats)
    table = [[r["what"], fmt(r["seconds"], " s"), r["exit_code"]] for r in rows]
    print(markdown_table(["user error", "seconds to the error", "exit code"], table))
    payload = {"repeats": repeats, "rows": rows}
    write_results(args.out, payload)
    return payload


if __name__ == "__main__":
    main()
