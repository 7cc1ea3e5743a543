"""Learning on the seeing task, CPU: GRPO, Dr.GRPO, RLOO, OraRL, TaRO, T-GRPO, DAPO and GSPO
side by side from the quickstart's SFT model, scored on real and control videos.

The start is `make quickstart`'s: a tiny Qwen3-VL whose vision tower had a self-supervised
warm-up, synthetic "when does the shape appear" videos (256 training, 32 validation, bounds on
`--tg-grid`, the quickstart's 1 s; the best answer that ignores the video scores mIoU ~16,
~11 on the 0.5 s grid), and `--sft-steps` SFT steps (the recipe's 1,600; the saved recipe
rows were measured at 800 on the 0.5 s grid, as their command says). Every recipe then
trains `--steps` from that model on the same data, seed and learning rate (the quickstart
recipe with only the algorithm changed). Each model is evaluated greedily on the validation
videos and on frozen, reversed and shuffled copies (`videorl eval --controls`): mIoU and the
video gain (real minus control), at equal steps (the final models) and at equal time (each
recipe's last checkpoint within the fastest recipe's training CPU time, `time/step_cpu` sums:
CPU time, which other processes on a shared machine do not inflate; wall time is reported).
Writes bench/results/learning.json and the PNG of the reward curves.

`--families all|F1,F2` runs the quickstart's pipeline (SFT, then OraRL) once per task family
instead, with only the family changed (`bench/learning_families.py`), and stores its rows
under `families` in the same file.

    PYTHONPATH=src python bench/learning.py [--steps 150] [--recipes grpo,orarl] [--quick]
    PYTHONPATH=src python bench/learning.py --families all [--steps 150] [--work DIR] [--quick]
        [--start MODEL]
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import platform
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness import RESULTS, ROOT, run_once, videorl, write_marked

PAGES = {ROOT / "docs" / "performance.md": False, ROOT / "README.md": True}  # True: compact
WORK = Path("runs/bench-seeing")
FAMILY = "temporal_grounding"
CONTROLS = ("frozen", "reversed", "shuffled")
PLAIN = ["algorithm.annotation_rows=false", "algorithm.pruning.enabled=false"]
DRAWN = "dynamic_sampling/drawn_reward_mean"  # a step without kept groups has no reward/mean

RECIPES: dict[str, list[str]] = {
    "grpo": ["algorithm.estimator=grpo", *PLAIN],
    "dr_grpo": [  # Dr.GRPO: no std division, token sums over a constant length
        "algorithm.estimator=dr_grpo",
        "algorithm.loss.aggregation=seq-mean-token-sum-norm",
        "algorithm.loss.max_length=16",
        *PLAIN,
    ],
    "rloo": ["algorithm.estimator=rloo", *PLAIN],
    "orarl": [],  # the quickstart recipe: annotation rows, sign-balanced pruning
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


def prepare(
    work: Path,
    seed: int,
    sft_steps: int,
    n: int = 256,
    val: int = 32,
    warmup: int = 150,
    sft_overrides: Sequence[str] = (),
    tag: str = "",
    family: str = FAMILY,
    model: Path | None = None,
    tg_grid: float = 0.5,
) -> dict[str, Any]:
    """`make quickstart`'s first three commands under `work/`: the tiny model (its tower warmed
    up for `warmup` steps; in `model`, default `work/model`), `n` + `val` records of `family`
    and the SFT model (`sft_overrides` on top of sft_quickstart, in `sft-STEPS{tag}`); each is
    reused when already there. `tg_grid` is `synth --tg-grid`: the quickstart passes 1 since
    2026-12-07, the benches keep the 0.5 s grid their results were measured on unless told."""
    model = model or work / "model"
    data = work / ("data" if n == 256 else f"data-{n}")  # the quickstart's 256 keep their folder
    data = data.with_name(data.name + ("" if tg_grid == 0.5 else f"-grid{tg_grid:g}"))
    sft = work / f"sft-{sft_steps}{tag}"
    if not (model / "config.json").is_file():
        warm = ["--vision-warmup", warmup] if warmup else []
        videorl("make-tiny", model, "--arch", "qwen3_vl", *warm, "--seed", seed)
    if not (data / "val.jsonl").is_file():
        videorl(
            "synth", "--out", data, "--families", family, "--tg-events", "appear",
            "--tg-grid", tg_grid, "--n", n, "--val", val, "--seed", seed,
        )  # fmt: skip
    seconds = run_once(
        sft, "sft", "sft_quickstart", f"model.path={model}", f"data.train={data / 'train.jsonl'}",
        f"data.val={data / 'val.jsonl'}", f"trainer.output_dir={sft}",
        f"trainer.steps={sft_steps}", f"trainer.save_every={sft_steps}",
        f"trainer.val_every={sft_steps}", f"trainer.seed={seed}", *sft_overrides, "--overwrite",
    )  # fmt: skip
    return {
        "model": str(sft / "final"),
        "train": str(data / "train.jsonl"),
        "val": str(data / "val.jsonl"),
        "sft_steps": sft_steps,
        "sft_minutes": seconds / 60,
    }


def evaluate(
    model: str | Path,
    val: str | Path,
    out: Path,
    controls: tuple[str, ...] = CONTROLS,
    reuse: bool = False,
) -> dict[str, float]:
    """Greedy mIoU on the real validation videos, on each control, and the video gains;
    `reuse`: an earlier eval in `out` is read, not run again."""
    if not (reuse and (out / "metrics.json").is_file()):
        videorl(
            "eval", "--model", model, "--benchmark", val, "--out", out,
            "--controls", ",".join(controls), "--overwrite",
        )  # fmt: skip
    metrics = json.loads((out / "metrics.json").read_text())
    scores = {"mIoU": metrics["families"][FAMILY]["metrics"]["mIoU"]}
    for control in controls:
        entry = metrics["controls"][control]
        scores[control] = entry["families"][FAMILY]["mIoU"]
        scores[f"gain_{control}"] = entry["video_gain"][FAMILY]["mIoU"]
    return scores


def train(
    name: str, overrides: list[str], steps: int, save_every: int, work: Path = WORK
) -> dict[str, Any]:
    """Train one recipe from scratch (`--overwrite`) into `work/name`; its per-step rewards
    and seconds."""
    out = work / name
    videorl(
        "train", "quickstart", *overrides, f"trainer.steps={steps}",
        f"trainer.output_dir={out}", f"trainer.save_every={save_every}",
        f"trainer.keep_last={steps // save_every + 1}", "trainer.val_every=0",
        "trainer.tensorboard=false", "--overwrite",
    )  # fmt: skip
    from videorl.trainer.metrics import read_metrics

    rows = read_metrics(out / "metrics.jsonl")
    return {
        # dynamic sampling trains on mixed groups only: its curve is every drawn row's reward
        "reward": [r[DRAWN] if DRAWN in r else r.get("reward/mean") for r in rows],
        "step_seconds": [r["time/step"] for r in rows],
        "step_cpu": [r["time/step_cpu"] for r in rows],
        "tgrpo": {
            key: [r[f"tgrpo/{key}"] for r in rows if f"tgrpo/{key}" in r]
            for key in ("ordered_acc", "shuffled_acc")
        },
        "out": str(out),
        "save_every": save_every,
    }


def checkpoint_within(
    run: dict[str, Any], budget: float, clock: str = "step_cpu"
) -> tuple[int, str]:
    """The last saved model whose training time (the sum of `clock`: CPU time `step_cpu`,
    or wall time `step_seconds`) fits in `budget` seconds (the first one when none does)."""
    elapsed = list(itertools.accumulate(run[clock]))
    steps = len(elapsed)
    saved = [s for s in range(run["save_every"], steps + 1, run["save_every"])]
    fitting = [s for s in saved if elapsed[s - 1] <= budget * (1 + 1e-9)] or saved[:1]
    step = fitting[-1]
    path = Path(run["out"]) / ("final" if step == steps else f"step-{step:06d}/model")
    return step, str(path)


def score_runs(runs: dict[str, dict[str, Any]], val: str) -> float:
    """Evaluate every run at equal steps (final) and at equal CPU time; returns the budget."""
    budget = min(sum(run["step_cpu"]) for run in runs.values())
    for name, run in runs.items():
        run["after"] = evaluate(Path(run["out"]) / "final", val, WORK / f"eval-{name}")
        step, path = checkpoint_within(run, budget)
        run["equal_time"] = {"step": step}
        same = step == len(run["step_cpu"])
        scores = run["after"] if same else evaluate(path, val, WORK / f"eval-{name}-time")
        run["equal_time"].update(scores)
    return budget


def _mean(values: list[float | None]) -> float:
    """The mean of the steps that have a policy reward; NaN when none has."""
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else math.nan


def summarize(runs: dict[str, dict[str, Any]], window: int) -> list[dict[str, Any]]:
    """One row per recipe: policy reward over the first and last `window` steps, minutes of
    training (CPU and wall), and the scores at equal steps and at equal time."""
    table = []
    for name, run in runs.items():
        # a step without policy rows has no mean (null): TaRO's all-constructed first steps,
        # dynamic sampling's skipped ones; the window means skip them
        row = {
            "recipe": name,
            "first_mean": _mean(run["reward"][:window]),
            "last_mean": _mean(run["reward"][-window:]),
            "cpu_minutes": sum(run["step_cpu"]) / 60,
            "minutes": sum(run["step_seconds"]) / 60,
            "after": run["after"],
            "equal_time": run["equal_time"],
        }
        if run["tgrpo"]["ordered_acc"]:  # T-GRPO: training accuracy, ordered vs shuffled
            row["tgrpo"] = {k: _mean(v[-window:]) for k, v in run["tgrpo"].items()}
        table.append(row)
    return table


def markdown(table: list[dict[str, Any]], before: dict[str, float], window: int) -> str:
    """The README/docs table: the start's row, then each recipe's."""
    lines = [
        (
            f"| recipe | reward, first {window} steps | last {window} | mIoU | gain vs frozen |"
            " vs reversed | vs shuffled | CPU min | equal time: step | mIoU | gain vs frozen |"
            " vs reversed |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
        f"| SFT start | | | {_scores(before)} | | | | | |",
    ]
    for row in table:
        after, timed = row["after"], row["equal_time"]
        lines.append(
            f"| {row['recipe']} | {row['first_mean']:.3f} | {row['last_mean']:.3f} |"
            f" {_scores(after)} | {row['cpu_minutes']:.1f} | {timed['step']} |"
            f" {timed['mIoU']:.1f} | {timed['gain_frozen']:+.1f} | {timed['gain_reversed']:+.1f} |"
        )
    return "\n".join(lines)


def compact(table: list[dict[str, Any]], before: dict[str, float]) -> str:
    """The README's table: mIoU and video gains at equal steps, the start first."""
    lines = [
        "| model | mIoU | gain vs frozen | vs reversed | vs shuffled |",
        "|---|---|---|---|---|",
        f"| SFT start | {_scores(before)} |",
    ]
    lines += [f"| + {row['recipe']} | {_scores(row['after'])} |" for row in table]
    return "\n".join(lines)


def table_text(saved: dict[str, Any], short: bool = False) -> str:
    """The table of a results file's contents: full, or the README's compact one."""
    if short:
        return compact(saved["table"], saved["before"])
    return markdown(saved["table"], saved["before"], saved["window"])


def write_tables(results: Path, pages: dict[Path, bool]) -> None:
    """Put the table of `results` (NAME.json) between the `bench/NAME.py` table markers of
    each page; True: the compact table."""
    saved = json.loads(results.read_text())
    for page, short in pages.items():
        write_marked(page, f"bench/{results.stem}.py", table_text(saved, short))


def _scores(scores: dict[str, float]) -> str:
    gains = " | ".join(f"{scores[f'gain_{c}']:+.1f}" for c in CONTROLS)
    return f"{scores['mIoU']:.1f} | {gains}"


def plot(runs: dict[str, dict[str, Any]], path: Path, title: str, smooth: int = 10) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for name, run in runs.items():
        values = run["reward"]
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


def saved_table(path: Path) -> str:
    """The table of a results file (learning*.json or distill*.json)."""
    return table_text(json.loads(path.read_text()))


def recipe_overrides(name: str, steps: int) -> list[str]:
    """`RECIPES[name]`, plus what depends on the run's length."""
    overrides = RECIPES[name]
    if name == "taro":  # the curriculum hands over to on-policy rows by mid-run
        overrides = [*overrides, f"algorithm.constructed.curriculum.warmup_steps={steps // 2}"]
    return overrides


def start_overrides(start: dict[str, Any], seed: int) -> list[str]:
    """Every recipe's common settings: the SFT model, the data and the seed."""
    return [
        f"model.path={start['model']}",
        f"data.train={start['train']}",
        f"data.val={start['val']}",
        f"data.seed={seed}",
        f"trainer.seed={seed}",
    ]


def write_results(path: Path, payload: dict[str, Any], runs: dict[str, Any], title: str) -> None:
    """The recipe rows, curves and times (the `families` rows a file there holds are kept)."""
    RESULTS.mkdir(exist_ok=True)
    plot(runs, path.with_suffix(".png"), title)
    earlier = json.loads(path.read_text()) if path.is_file() else {}
    payload = {
        **{k: v for k, v in earlier.items() if k.startswith("families")},
        **payload,
        "machine": platform.platform(),
        "curves": {k: v["reward"] for k, v in runs.items()},
        "step_seconds": {k: v["step_seconds"] for k, v in runs.items()},
        "step_cpu": {k: v["step_cpu"] for k, v in runs.items()},
    }
    path.write_text(json.dumps(payload, indent=1))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--window", type=int, default=25)
    parser.add_argument("--save-every", type=int, default=25, help="equal-time checkpoints")
    parser.add_argument(
        "--sft-steps", type=int, default=1600, help="the recipe's (800 in the saved recipe rows)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--tg-grid", type=float, default=1.0,
        help="synth --tg-grid: the quickstart's 1 (0.5 in the saved recipe rows)",
    )  # fmt: skip
    parser.add_argument("--recipes", default=",".join(RECIPES), help="comma-separated")
    parser.add_argument(
        "--quick", action="store_true", help="a smoke run: 20 SFT, 6 RL steps (--families: 2, 2)"
    )
    parser.add_argument("--table", action="store_true", help="print the saved results' table")
    parser.add_argument("--write", action="store_true", help="put it in README and docs pages")
    parser.add_argument("--families", help="all | F1,F2: the pipeline per family instead")
    parser.add_argument("--work", type=Path, help="--families: where runs go")
    parser.add_argument(
        "--start", type=Path, help="--families: SFT from this model (default: a new tiny one)"
    )
    parser.add_argument("--out", type=Path, help="results file (default bench/results/...)")
    args = parser.parse_args(argv)
    if args.families:
        families(args)
        return
    names = args.recipes.split(",")
    suffix = ("_quick" if args.quick else "") + (
        "" if names == list(RECIPES) else "_" + "-".join(names)
    )
    path = args.out or RESULTS / f"learning{suffix}.json"
    if args.table or args.write:
        print(saved_table(path))
        if args.write:
            write_tables(path, PAGES)
        return
    steps, window, save_every, sft_steps = (
        (6, 2, 3, 20) if args.quick else (args.steps, args.window, args.save_every, args.sft_steps)
    )
    start = prepare(WORK, args.seed, sft_steps, tg_grid=args.tg_grid)
    before = evaluate(start["model"], start["val"], WORK / f"eval-sft-{sft_steps}")
    runs = {}
    for name in names:
        overrides = [*start_overrides(start, args.seed), *recipe_overrides(name, steps)]
        runs[name] = train(name, overrides, steps, save_every)
    budget = score_runs(runs, start["val"])
    table = summarize(runs, window)
    command = (
        "PYTHONPATH=src python bench/learning.py"
        + (" --quick" if args.quick else f" --steps {steps} --sft-steps {sft_steps}")
        + f" --tg-grid {args.tg_grid:g}"
    )
    if names != list(RECIPES):
        command += f" --recipes {args.recipes}"
    payload = {
        "command": command,
        "start": start,
        "before": before,
        "steps": steps,
        "window": window,
        "equal_time_budget_s": budget,
        "table": table,
    }
    write_results(path, payload, runs, "Seeing task (appear events), tiny Qwen3-VL from SFT, CPU")
    print(markdown(table, before, window))


def families(args: argparse.Namespace) -> None:
    """`--families`: run the chosen families (or with `--table` / `--write`, show the saved
    rows) into `families` of the results file."""
    import learning_families

    args.out = args.out or RESULTS / ("learning_quick.json" if args.quick else "learning.json")
    if args.table or args.write:
        print(learning_families.markdown(learning_families.saved_rows(args.out)))
        if args.write:
            learning_families.write_page(args.out)
        return
    learning_families.run(args)


if __name__ == "__main__":
    main()
