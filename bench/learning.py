"""Learning curves on CPU: GRPO, Dr.GRPO, RLOO, OraRL, TaRO, T-GRPO, DAPO and GSPO side by
side on synthetic temporal grounding, from one SFT-warmed tiny model (`--start warm`, the
default) or from the random init (`--start cold`).

Warm start: `videorl sft` (recipe sft_quickstart, annotation targets) on the training
records, validated (greedy) every 5 steps; the warm model is the first checkpoint whose
mean greedy validation tIoU reaches `--sft-target` (SFT stopped early on purpose: answers
parse but are imprecise). Every recipe then trains from that model for the same steps, data,
seed and learning rate (the quickstart recipe with only the algorithm changed). Prints the
mean policy reward over the first and last `--window` steps and validation mean@k before
and after; writes bench/results/learning.json (learning_cold.json) and the PNG of the curves.

    PYTHONPATH=src python bench/learning.py [--steps 150] [--window 25] [--start warm|cold] [--quick]
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"
WORK = Path("runs/bench-learning")
PLAIN = ["algorithm.annotation_rows=false", "algorithm.pruning.enabled=false"]
DRAWN = "dynamic_sampling/drawn_reward_mean"  # a step without kept groups has no reward/mean
WARM_LR = 1e-3  # the quickstart's 1e-2 is for a random init; from a warm model it collapses

RECIPES: dict[str, list[str]] = {
    "grpo": ["algorithm.estimator=grpo", *PLAIN],
    "dr_grpo": [  # Dr.GRPO: no std division, token sums over a constant length
        "algorithm.estimator=dr_grpo",
        "algorithm.loss.aggregation=seq-mean-token-sum-norm",
        "algorithm.loss.max_length=16",
        *PLAIN,
    ],
    "rloo": ["algorithm.estimator=rloo", *PLAIN],
    "orarl": [],  # the quickstart recipe: annotation rows, sign-balanced pruning (4 of 9)
    "taro": [
        "algorithm.estimator=grpo",
        *PLAIN,
        "algorithm.constructed.enabled=true",
        "algorithm.constructed.curriculum.schedule=linear",
        "reward.sensitivity.enabled=true",
    ],
    # T-GRPO (Video-R1): GRPO + the temporal contrast bonus (shuffled rows: no gradient)
    "tgrpo": ["algorithm.estimator=grpo", *PLAIN, "algorithm.temporal_contrast.enabled=true"],
    "dapo": [  # DAPO's pieces (configs/dapo.yaml) on the quickstart shape
        "algorithm.estimator=grpo",
        *PLAIN,
        "algorithm.loss.clip_low=0.2",
        "algorithm.loss.clip_high=0.28",
        "algorithm.loss.dual_clip=10.0",
        "algorithm.loss.aggregation=token-mean",
        "algorithm.loss.kl_coef=0.0",
        "reward.overlong.enabled=true",
        "reward.overlong.buffer_len=4",  # DAPO: the last 4096 of 20480 tokens; here 4 of 16
        "algorithm.dynamic_sampling.enabled=true",
        "algorithm.dynamic_sampling.metric=task",
        "algorithm.dynamic_sampling.max_draws=10",
        "algorithm.dynamic_sampling.batches_per_draw=3",  # DAPO's gen batch: 3x the train batch
        "algorithm.dynamic_sampling.on_cap=train",  # DAPO stops the run; a bench keeps going
    ],
    "gspo": ["algorithm.estimator=grpo", *PLAIN, "algorithm.loss.name=gspo"],
}
COLD_RECIPES = ("orarl", "taro", "grpo")


def prepare(work: Path, seed: int) -> tuple[Path, Path, Path]:
    """The tiny model, 96 training and 16 validation temporal-grounding records, built once."""
    from videorl.data.loaders import load_records, write_records
    from videorl.data.synth import synthesize
    from videorl.models.tiny import build_tiny_model

    model = work / "model"
    if not (model / "config.json").is_file():
        build_tiny_model("qwen2_5_vl", model, seed=seed)
    paths = []
    for folder, n, data_seed in (("data", 96, seed), ("val", 16, seed + 1000)):
        path = work / folder / f"{folder}.jsonl"
        if not path.is_file():
            records = synthesize(work / folder, ["temporal_grounding"], n=n, seed=data_seed)
            write_records(path, load_records(records).records)
        paths.append(path)
    return model, paths[0], paths[1]


def warm_start_for(args: Any, model: Path, train: Path, val: Path) -> dict[str, Any]:
    """`warm_start` with the benches' shared flags (`--quick`: at most 20 SFT steps)."""
    max_steps = 20 if args.quick else args.sft_max_steps
    return warm_start(WORK, model, train, val, max_steps, args.sft_target, args.quick)


def warm_start(
    work: Path, model: Path, train: Path, val: Path, max_steps: int, target: float, quick: bool
) -> dict[str, Any]:
    """SFT from `model`, validating every 5 steps; the warm model is the first checkpoint with
    mean greedy validation reward >= `target` (else the best). Reused when already run."""
    from videorl.cli import resolve_config_path
    from videorl.config import load_config
    from videorl.trainer.metrics import read_metrics
    from videorl.trainer.sft import run_sft

    out = work / ("sft-quick" if quick else "sft")
    if not (out / "final" / "config.json").is_file():
        cfg = load_config(
            resolve_config_path("sft_quickstart"),
            [
                f"model.path={model}",
                f"data.train={train}",
                f"data.val={val}",
                f"trainer.output_dir={out}",
                f"trainer.steps={max_steps}",
                "trainer.save_every=5",
                "trainer.val_every=5",
                f"trainer.keep_last={max_steps // 5}",
                "trainer.tensorboard=false",
            ],
        )
        start = time.perf_counter()
        run_sft(cfg, overwrite=True)
        (out / "seconds.txt").write_text(f"{time.perf_counter() - start:.1f}\n")
    rows = read_metrics(out / "metrics.jsonl")
    val_curve = {r["step"]: r["val/reward_mean_at_k"] for r in rows if "val/reward_mean_at_k" in r}
    chosen = next((s for s, v in sorted(val_curve.items()) if v >= target), None)
    if chosen is None:
        chosen = max(val_curve, key=val_curve.get)
    return {
        "model": str(out / f"step-{chosen:06d}" / "model"),
        "step": chosen,
        "val_greedy_reward": val_curve[chosen],
        "target": target,
        "val_curve": val_curve,
        "loss": [r["sft/loss"] for r in rows],
        "seconds": float((out / "seconds.txt").read_text()),
    }


def run_config(name: str, overrides: list[str], steps: int, val: Path | None):
    from videorl.config import load_config

    validation = (
        [f"data.val={val}", f"trainer.val_every={steps}", "trainer.val_samples=4"]
        if val
        else ["data.val=null", "trainer.val_every=0"]
    )
    return load_config(
        "configs/quickstart.yaml",
        [
            *overrides,
            *validation,
            f"trainer.steps={steps}",
            f"trainer.output_dir={WORK / name}",
            "trainer.save_every=0",
            "trainer.tensorboard=false",
            "trainer.val_max_prompts=16",
        ],
    )


def validation_before(config) -> dict[str, float]:
    """Validation (mean@k, best@k, sampled at the rollout temperature) of the starting model."""
    from videorl.trainer.loop import build_state
    from videorl.trainer.validation import validate

    return {k: v for k, v in validate(build_state(config, None)).items() if k.startswith("val/")}


def train_curve(
    name: str, overrides: list[str], steps: int, val: Path | None = None
) -> dict[str, Any]:
    """Train one recipe; return its per-step rewards, final validation and wall time."""
    from videorl.trainer.loop import run_training
    from videorl.trainer.metrics import read_metrics

    config = run_config(name, overrides, steps, val)
    out = Path(config.trainer.output_dir)
    start = time.perf_counter()
    run_training(config, overwrite=True)  # from scratch: replaces an earlier curve's run
    rows = read_metrics(out / "metrics.jsonl")
    return {
        # dynamic sampling trains on mixed groups only: its curve is every drawn row's reward
        "reward": [r[DRAWN] if DRAWN in r else r["reward/mean"] for r in rows],
        "val_after": rows[-1].get("val/reward_mean_at_k"),
        # the quickstart recipe validates on frozen videos too: mean@k real - frozen
        "gain_after": rows[-1].get("val/video_gain/frozen"),
        "seconds": time.perf_counter() - start,
        "final": str(out / "final"),
    }


def _mean(values: list[float | None]) -> float:
    """The mean of the steps that have a policy reward; NaN when none has."""
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else math.nan


def summarize(curves: dict[str, dict[str, Any]], window: int) -> list[dict[str, Any]]:
    table = []
    for name, curve in curves.items():
        # a step without policy rows has no mean (NaN, written as null): TaRO's first
        # all-constructed steps, dynamic sampling's skipped ones; the window means skip them
        rewards = curve["reward"]
        first, last = rewards[:window], rewards[-window:]
        row = {
            "recipe": name,
            "first_mean": _mean(first),
            "last_mean": _mean(last),
            "last_max": max((r for r in last if r is not None), default=math.nan),
            "minutes": curve["seconds"] / 60,
        }
        for key in ("val_after", "gain_after"):
            if curve.get(key) is not None:
                row[key] = curve[key]
        table.append(row)
    return table


def plot(curves: dict[str, dict[str, Any]], path: Path, title: str, smooth: int = 10) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for name, curve in curves.items():
        values = curve["reward"]
        averaged = [_mean(values[max(0, i - smooth + 1) : i + 1]) for i in range(len(values))]
        ax.plot(range(1, len(values) + 1), averaged, label=name)
    ax.set_xlabel("step")
    ax.set_ylabel(f"policy reward (mean of last {smooth} steps)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def markdown(
    table: list[dict[str, Any]],
    window: int,
    val_before: float | None = None,
    gain_before: float | None = None,
) -> str:
    """The docs/performance.md table: first/last-window mean policy reward, validation and its video
    gain against frozen videos (mean@k real - frozen) before and after, minutes."""
    head = f"| recipe | reward, first {window} steps | last {window} steps | gain |"
    rule = "|---|---|---|---|"
    if val_before is not None:
        head += " val mean@4 before | after | video gain (frozen) before | after |"
        rule += "---|---|---|---|"
    lines = [head + " minutes |", rule + "---|"]
    for row in table:
        line = f"| {row['recipe']} | {row['first_mean']:.3f} | {row['last_mean']:.3f} | {row['last_mean'] - row['first_mean']:+.3f} |"
        if val_before is not None:
            line += f" {val_before:.3f} | {row.get('val_after', math.nan):.3f} |"
            line += f" {_signed(gain_before)} | {_signed(row.get('gain_after'))} |"
        lines.append(line + f" {row['minutes']:.1f} |")
    return "\n".join(lines)


def _signed(value: float | None) -> str:
    return "-" if value is None else f"{value:+.3f}"


def saved_table(path: Path) -> str:
    """The docs/performance.md table of a results file (learning*.json or distill*.json)."""
    saved = json.loads(path.read_text())
    before = saved.get("val_before", {})
    return markdown(
        saved["table"],
        saved["window"],
        before.get("val/reward_mean_at_k"),
        before.get("val/video_gain/frozen"),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--window", type=int, default=25)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--start", choices=("warm", "cold"), default="warm")
    parser.add_argument(
        "--recipes",
        default=None,
        help="comma-separated (default: all); results go to learning[_quick]_<names>.json",
    )
    parser.add_argument("--lr", type=float, default=WARM_LR, help="RL learning rate, warm start")
    parser.add_argument("--sft-max-steps", type=int, default=100)
    parser.add_argument("--sft-target", type=float, default=0.1)
    parser.add_argument("--quick", action="store_true", help="10 steps per recipe (a smoke run)")
    parser.add_argument("--table", action="store_true", help="print the saved results' table")
    args = parser.parse_args()
    steps, window = (10, 3) if args.quick else (args.steps, args.window)
    warm = args.start == "warm"
    suffix = ("" if warm else "_cold") + ("_quick" if args.quick else "")
    names = (args.recipes or ",".join(RECIPES if warm else COLD_RECIPES)).split(",")
    if args.recipes:  # a subset run has its own results file: the full table stays as it is
        suffix += "_" + "-".join(names)
    path = RESULTS / f"learning{suffix}.json"
    if args.table:
        print(saved_table(path))
        return
    model, train, val = prepare(WORK, args.seed)
    base = [f"data.train={train}", f"data.seed={args.seed}", f"trainer.seed={args.seed}"]
    payload: dict[str, Any] = {"start": args.start}
    if warm:
        sft = warm_start_for(args, model, train, val)
        base += [f"model.path={sft['model']}", f"optim.lr={args.lr}"]
        before = validation_before(run_config("before", base + RECIPES["grpo"], steps, val))
        payload.update(sft=sft, lr=args.lr, val_before=before)
    else:
        base += [f"model.path={model}", "optim.lr=1e-2"]  # the cold recipe's rate
    mine: dict[str, dict[str, Any]] = {}
    for name in names:  # results are rewritten after each recipe
        overrides = recipe_overrides(name, steps)
        mine[name] = train_curve(name, base + overrides, steps, val if warm else None)
        # recipes measured before (or by a parallel run) with the same steps and start
        curves = {**earlier_curves(path, steps, args.start), **mine}
        table = summarize(curves, window)
        write_results(curves, table, payload, steps, window, suffix, args)
    before = payload["val_before"] if warm else {}
    print(
        markdown(
            table, window, before.get("val/reward_mean_at_k"), before.get("val/video_gain/frozen")
        )
    )


def recipe_overrides(name: str, steps: int) -> list[str]:
    """`RECIPES[name]`, plus what depends on the run's length."""
    overrides = RECIPES[name]
    if name == "taro":  # the curriculum hands over to on-policy rows by mid-run
        warmup = max(1, steps // 2)
        overrides = [*overrides, f"algorithm.constructed.curriculum.warmup_steps={warmup}"]
    return overrides


def earlier_curves(path: Path, steps: int, start: str) -> dict[str, dict[str, Any]]:
    """Curves of recipes measured by an earlier run with the same steps and start."""
    if not path.is_file():
        return {}
    saved = json.loads(path.read_text())
    if saved.get("steps") != steps or saved.get("start", "cold") != start:
        return {}
    rows = {row["recipe"]: row for row in saved["table"]}
    return {
        k: {
            "reward": v,
            "seconds": 60 * rows.get(k, {}).get("minutes", 0.0),
            "val_after": rows.get(k, {}).get("val_after"),
        }
        for k, v in saved["curves"].items()
    }


def write_results(
    curves: dict[str, Any],
    table: list[dict[str, Any]],
    payload: dict[str, Any],
    steps: int,
    window: int,
    suffix: str,
    args: argparse.Namespace,
) -> None:
    RESULTS.mkdir(exist_ok=True)
    start = "from an SFT-warmed" if args.start == "warm" else "from a random-init"
    plot(
        curves,
        RESULTS / f"learning{suffix}.png",
        f"Synthetic temporal grounding, {start} tiny Qwen2.5-VL, CPU",
    )
    command = f"PYTHONPATH=src python bench/learning.py --start {args.start}" + (
        " --quick" if args.quick else f" --steps {steps}"
    )
    if args.recipes:
        command += f" --recipes {args.recipes}"
    payload = {
        "command": command,
        "machine": platform.platform(),
        **payload,
        "steps": steps,
        "window": window,
        "table": table,
        "curves": {k: v["reward"] for k, v in curves.items()},
    }
    (RESULTS / f"learning{suffix}.json").write_text(json.dumps(payload, indent=1))


if __name__ == "__main__":
    main()
