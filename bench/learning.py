"""Learning curves on CPU: GRPO, OraRL and TaRO side by side on synthetic temporal grounding.

The same tiny random-init Qwen2.5-VL, the same synthetic data and seed, the quickstart
recipe with only the algorithm changed. Prints the mean policy reward over the first and the
last `--window` steps of each run, writes bench/results/learning.json (every step's reward)
and bench/results/learning.png (the curves).

    PYTHONPATH=src python bench/learning.py [--steps 300] [--window 25] [--quick]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"
WORK = Path("runs/bench-learning")

RECIPES: dict[str, list[str]] = {
    "grpo": [
        "algorithm.estimator=grpo",
        "algorithm.annotation_rows=false",
        "algorithm.pruning.enabled=false",
    ],
    "orarl": [],  # the quickstart recipe
    "taro": [
        "algorithm.estimator=grpo",
        "algorithm.annotation_rows=false",
        "algorithm.pruning.enabled=false",
        "algorithm.constructed.enabled=true",
        "algorithm.constructed.curriculum.schedule=linear",
        "algorithm.constructed.curriculum.warmup_steps=150",
        "reward.sensitivity.enabled=true",
    ],
}


def prepare(work: Path, seed: int) -> tuple[Path, Path]:
    """The tiny model and the synthetic temporal-grounding data, built once."""
    from videorl.data.loaders import load_records, write_records
    from videorl.data.synth import synthesize
    from videorl.models.tiny import build_tiny_model

    model = work / "model"
    if not (model / "config.json").is_file():
        build_tiny_model("qwen2_5_vl", model, seed=seed)
    data = work / "data" / "train.jsonl"
    if not data.is_file():
        records = load_records(
            synthesize(work / "data", ["temporal_grounding"], n=96, seed=seed)
        ).records
        write_records(data, records)
    return model, data


def train_curve(name: str, overrides: list[str], steps: int) -> dict[str, Any]:
    """Train one recipe from scratch; return its per-step rewards and wall time."""
    from videorl.config import load_config
    from videorl.trainer.loop import run_training
    from videorl.trainer.metrics import read_metrics

    out = WORK / name
    config = load_config(
        "configs/quickstart.yaml",
        [
            *overrides,
            f"trainer.steps={steps}",
            f"trainer.output_dir={out}",
            "trainer.save_every=0",
            "trainer.val_every=0",
            "trainer.tensorboard=false",
            "data.val=null",
        ],
    )
    start = time.perf_counter()
    run_training(config, overwrite=True)  # from scratch: replaces an earlier curve's run
    rows = read_metrics(out / "metrics.jsonl")
    return {
        "reward": [r["reward/mean"] for r in rows],
        "seconds": time.perf_counter() - start,
        "final": str(out / "final"),
    }


def summarize(curves: dict[str, dict[str, Any]], window: int) -> list[dict[str, Any]]:
    table = []
    for name, curve in curves.items():
        rewards = curve["reward"]
        first, last = rewards[:window], rewards[-window:]
        table.append(
            {
                "recipe": name,
                "first_mean": statistics.fmean(first),
                "last_mean": statistics.fmean(last),
                "last_max": max(last),
                "minutes": curve["seconds"] / 60,
            }
        )
    return table


def plot(curves: dict[str, dict[str, Any]], path: Path, title: str, smooth: int = 10) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for name, curve in curves.items():
        values = curve["reward"]
        averaged = [
            statistics.fmean(values[max(0, i - smooth + 1) : i + 1]) for i in range(len(values))
        ]
        ax.plot(range(1, len(values) + 1), averaged, label=name)
    ax.set_xlabel("step")
    ax.set_ylabel(f"policy reward (mean of last {smooth} steps)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def print_table(table: list[dict[str, Any]], window: int) -> None:
    print(
        f"| recipe | reward, first {window} steps | reward, last {window} steps | best step, last {window} | minutes |"
    )
    print("|---|---|---|---|---|")
    for row in table:
        print(
            f"| {row['recipe']} | {row['first_mean']:.3f} | {row['last_mean']:.3f} | {row['last_max']:.3f} | {row['minutes']:.1f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--window", type=int, default=25)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--recipes", default="orarl,taro,grpo")
    parser.add_argument("--quick", action="store_true", help="10 steps per recipe (a smoke run)")
    args = parser.parse_args()
    steps, window = (10, 3) if args.quick else (args.steps, args.window)
    model, data = prepare(WORK, args.seed)
    base = [
        f"model.path={model}",
        f"data.train={data}",
        f"data.seed={args.seed}",
        f"trainer.seed={args.seed}",
    ]
    suffix = "_quick" if args.quick else ""
    curves = earlier_curves(
        RESULTS / f"learning{suffix}.json", steps
    )  # recipes run before, same steps
    for name in args.recipes.split(","):  # results are rewritten after each recipe
        curves[name] = train_curve(name, base + RECIPES[name], steps)
        table = summarize(curves, window)
        write_results(curves, table, steps, window, suffix, args.quick)
    print_table(table, window)


def earlier_curves(path: Path, steps: int) -> dict[str, dict[str, Any]]:
    """Curves of recipes measured by an earlier run with the same number of steps."""
    if not path.is_file():
        return {}
    saved = json.loads(path.read_text())
    if saved.get("steps") != steps:
        return {}
    minutes = {row["recipe"]: row["minutes"] for row in saved["table"]}
    return {
        k: {"reward": v, "seconds": 60 * minutes.get(k, 0.0)} for k, v in saved["curves"].items()
    }


def write_results(
    curves: dict[str, Any],
    table: list[dict[str, Any]],
    steps: int,
    window: int,
    suffix: str,
    quick: bool,
) -> None:
    RESULTS.mkdir(exist_ok=True)
    plot(
        curves,
        RESULTS / f"learning{suffix}.png",
        "Synthetic temporal grounding, tiny Qwen2.5-VL, CPU",
    )
    command = "PYTHONPATH=src python bench/learning.py" + (
        " --quick" if quick else f" --steps {steps}"
    )
    payload = {
        "command": command,
        "machine": platform.platform(),
        "steps": steps,
        "window": window,
        "table": table,
        "curves": {k: v["reward"] for k, v in curves.items()},
    }
    (RESULTS / f"learning{suffix}.json").write_text(json.dumps(payload, indent=1))


if __name__ == "__main__":
    main()
