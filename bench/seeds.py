"""The quickstart's claim over seeds: does OraRL raise the video gain over its SFT start?

For each seed, the quickstart's pipeline with that seed everywhere (`make-tiny
--vision-warmup 150 --seed S`, `synth --seed S` with 256 training and 32 validation
videos, `videorl sft sft_quickstart`, `videorl train quickstart`), then the SFT and the
SFT + OraRL models evaluated greedily on real, frozen, reversed and shuffled videos.
Writes bench/results/seeds.json and prints the table; `--write` puts it in README.md.

    PYTHONPATH=src python bench/seeds.py [--seeds 0,1,2] [--sft-steps 800] [--steps 150]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
from pathlib import Path
from typing import Any

from harness import write_marked
from learning import (
    CONTROLS,
    RECIPES,
    RESULTS,
    ROOT,
    evaluate,
    prepare,
    start_overrides,
    train,
)

WORK = Path("runs/bench-seeds")


def one_seed(seed: int, sft_steps: int, steps: int) -> dict[str, Any]:
    """SFT then OraRL with `seed`; both models' scores."""
    work = WORK / f"seed-{seed}"
    start = prepare(work, seed, sft_steps)
    sft = evaluate(start["model"], start["val"], work / "eval-sft")
    overrides = [*start_overrides(start, seed), *RECIPES["orarl"]]
    run = train("orarl", overrides, steps, steps, work=work)
    orarl = evaluate(Path(run["out"]) / "final", start["val"], work / "eval-orarl")
    return {"seed": seed, "sft": sft, "orarl": orarl}


def markdown(rows: list[dict[str, Any]]) -> str:
    """One line per seed and a mean line: mIoU and gains, SFT -> SFT + OraRL."""
    keys = ["mIoU", *(f"gain_{c}" for c in CONTROLS)]
    head = " | ".join(k.replace("gain_", "gain vs ") for k in keys)
    lines = [f"| seed | {head} |", "|---" * (len(keys) + 1) + "|"]
    for row in [*rows, _mean(rows)]:
        cells = " | ".join(f"{row['sft'][k]:.1f} -> {row['orarl'][k]:.1f}" for k in keys)
        lines.append(f"| {row['seed']} | {cells} |")
    return "\n".join(lines)


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
    parser.add_argument("--sft-steps", type=int, default=800)
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--quick", action="store_true", help="a smoke run: 20 SFT, 4 RL steps")
    parser.add_argument("--write", action="store_true", help="put the saved table in README.md")
    args = parser.parse_args()
    if args.write:
        rows = json.loads((RESULTS / "seeds.json").read_text())["rows"]
        write_marked(ROOT / "README.md", "bench/seeds.py", markdown(rows))
        return
    sft_steps, steps = (20, 4) if args.quick else (args.sft_steps, args.steps)
    rows = [one_seed(int(s), sft_steps, steps) for s in args.seeds.split(",")]
    RESULTS.mkdir(exist_ok=True)
    name = "seeds_quick" if args.quick else "seeds"
    payload = {
        "command": f"PYTHONPATH=src python bench/seeds.py --seeds {args.seeds}"
        + (" --quick" if args.quick else f" --sft-steps {sft_steps} --steps {steps}"),
        "machine": platform.platform(),
        "rows": rows,
    }
    (RESULTS / f"{name}.json").write_text(json.dumps(payload, indent=1))
    print(markdown(rows))


if __name__ == "__main__":
    main()
