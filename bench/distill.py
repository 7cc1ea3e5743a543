"""On-policy distillation on CPU from a warm student: OPDVR vs OPD vs GRPD vs GRPO.

Student: the SFT-warmed tiny model of bench/learning.py (SFT stopped early: answers parse,
boundaries imprecise). Teacher: the same SFT start trained further with OraRL for
`--teacher-steps` (more than the students get), so it shares the tokenizer and is stronger.
Each student trains `--steps` on the same synthetic temporal-grounding data, seed and
learning rate. Writes bench/results/distill.json and bench/results/distill.png.

    PYTHONPATH=src python bench/distill.py [--steps 100] [--teacher-steps 200] [--quick]
"""

from __future__ import annotations

import argparse
import json
import platform

from learning import (
    PLAIN,
    RECIPES,
    RESULTS,
    WARM_LR,
    WORK,
    markdown,
    plot,
    prepare,
    run_config,
    saved_table,
    summarize,
    train_curve,
    validation_before,
    warm_start_for,
)

STUDENT_RECIPES: dict[str, list[str]] = {
    "opdvr": ["algorithm.estimator=opdvr", *PLAIN],
    "opd": ["algorithm.estimator=opd", *PLAIN],
    "grpd": ["algorithm.estimator=grpd", *PLAIN],
    "grpo": ["algorithm.estimator=grpo", *PLAIN],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--teacher-steps", type=int, default=200)
    parser.add_argument("--window", type=int, default=25)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lr", type=float, default=WARM_LR)
    parser.add_argument("--sft-max-steps", type=int, default=100)
    parser.add_argument("--sft-target", type=float, default=0.1)
    parser.add_argument("--students", default=",".join(STUDENT_RECIPES))
    parser.add_argument("--quick", action="store_true", help="a 10-step smoke run")
    parser.add_argument("--table", action="store_true", help="print the saved results' table")
    args = parser.parse_args()
    if args.table:
        print(saved_table(RESULTS / f"distill{'_quick' if args.quick else ''}.json"))
        return
    steps, teacher_steps, window = (
        (10, 10, 3) if args.quick else (args.steps, args.teacher_steps, args.window)
    )
    model, train, val = prepare(WORK, seed=args.seed)
    sft = warm_start_for(args, model, train, val)
    base = [
        f"data.train={train}",
        f"data.seed={args.seed}",
        f"trainer.seed={args.seed}",
        f"model.path={sft['model']}",
        f"optim.lr={args.lr}",
    ]
    teacher_run = {
        **teacher_curve([*base, *RECIPES["orarl"]], teacher_steps, val, args.quick),
        "steps": teacher_steps,
    }
    teacher = teacher_run["final"]
    plain = STUDENT_RECIPES["grpo"]  # validation settings only; the estimator is not used
    before = validation_before(run_config("before", base + plain, steps, val))
    teacher_val = validation_before(
        run_config("teacher-val", [*base, f"model.path={teacher}", *plain], steps, val)
    )
    suffix = "_quick" if args.quick else ""
    path = RESULTS / f"distill{suffix}.json"
    mine = {}
    for name in args.students.split(","):  # results are rewritten after each student
        overrides = [*base, f"model.teacher_path={teacher}", *STUDENT_RECIPES[name]]
        mine[name] = train_curve(f"distill-{name}", overrides, steps, val)
        curves = {**earlier_curves(path, steps), **mine}  # same steps, run before or in parallel
        write_results(path, curves, args, sft, teacher_run, teacher_val, before, steps, window)
    print(
        markdown(
            summarize(curves, window),
            window,
            before["val/reward_mean_at_k"],
            before.get("val/video_gain/frozen"),
        )
    )


def teacher_curve(overrides: list[str], steps: int, val, quick: bool) -> dict:
    """SFT start + OraRL for `steps`; reused when a finished run of the same length exists."""
    from videorl.trainer.metrics import read_metrics

    name = "teacher-orarl-quick" if quick else "teacher-orarl"
    out = WORK / name
    metrics = out / "metrics.jsonl"
    if (out / "final" / "config.json").is_file() and metrics.is_file():
        rows = read_metrics(metrics)
        if len(rows) == steps:
            return {
                "reward": [r["reward/mean"] for r in rows],
                "seconds": _seconds(out),
                "final": str(out / "final"),
            }
    run = train_curve(name, overrides, steps, val)
    (out / "seconds.txt").write_text(f"{run['seconds']:.1f}\n")
    return run


def _seconds(out) -> float:
    """A finished run's wall time: recorded, or from config.yaml (written at its start) to
    final/ (written at its end)."""
    if (out / "seconds.txt").is_file():
        return float((out / "seconds.txt").read_text())
    return (out / "final").stat().st_mtime - (out / "config.yaml").stat().st_mtime


def earlier_curves(path, steps: int) -> dict:
    """Students measured by an earlier (or parallel) warm-start run with the same steps."""
    if not path.is_file():
        return {}
    saved = json.loads(path.read_text())
    if saved.get("steps") != steps or "student" not in saved:
        return {}
    rows = {row["recipe"]: row for row in saved["table"]}
    return {
        k: {"reward": v, "seconds": 60 * rows[k]["minutes"], "val_after": rows[k].get("val_after")}
        for k, v in saved["curves"].items()
    }


def write_results(path, curves, args, sft, teacher_run, teacher_val, before, steps, window):
    table = summarize(curves, window)
    plot(
        curves,
        path.with_suffix(".png"),
        "Warm student distilled from an SFT + OraRL tiny teacher, CPU",
    )
    path.write_text(
        json.dumps(
            {
                "command": "PYTHONPATH=src python bench/distill.py"
                + (
                    " --quick"
                    if args.quick
                    else f" --steps {steps} --teacher-steps {teacher_run['steps']}"
                ),
                "machine": platform.platform(),
                "student": sft,
                "teacher": {
                    "path": teacher_run["final"],
                    "orarl_steps": teacher_run["steps"],
                    "reward_first_window": sum(teacher_run["reward"][:window]) / window,
                    "reward_last_window": sum(teacher_run["reward"][-window:]) / window,
                    "val": teacher_val,
                    "minutes": teacher_run["seconds"] / 60,
                },
                "lr": args.lr,
                "val_before": before,
                "steps": steps,
                "window": window,
                "table": table,
                "curves": {k: v["reward"] for k, v in curves.items()},
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
