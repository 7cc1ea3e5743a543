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
    summarize,
    train_curve,
    validation_before,
    warm_start,
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
    parser.add_argument("--quick", action="store_true", help="a 10-step smoke run")
    args = parser.parse_args()
    steps, teacher_steps, window = (
        (10, 10, 3) if args.quick else (args.steps, args.teacher_steps, args.window)
    )
    model, train, val = prepare(WORK, seed=args.seed)
    sft = warm_start(
        WORK,
        model,
        train,
        val,
        20 if args.quick else args.sft_max_steps,
        args.sft_target,
        args.quick,
    )
    base = [
        f"data.train={train}",
        f"data.seed={args.seed}",
        f"trainer.seed={args.seed}",
        f"model.path={sft['model']}",
        f"optim.lr={args.lr}",
    ]
    teacher_run = train_curve("teacher-orarl", [*base, *RECIPES["orarl"]], teacher_steps, val)
    teacher = teacher_run["final"]
    before = validation_before(run_config("before", base + PLAIN, steps, val))
    teacher_val = validation_before(
        run_config("teacher-val", [*base, f"model.path={teacher}", *PLAIN], steps, val)
    )
    curves = {
        name: train_curve(
            f"distill-{name}", [*base, f"model.teacher_path={teacher}", *overrides], steps, val
        )
        for name, overrides in STUDENT_RECIPES.items()
    }
    table = summarize(curves, window)
    print(markdown(table, window, before["val/reward_mean_at_k"]))
    suffix = "_quick" if args.quick else ""
    plot(
        curves,
        RESULTS / f"distill{suffix}.png",
        "Warm student distilled from an SFT + OraRL tiny teacher, CPU",
    )
    (RESULTS / f"distill{suffix}.json").write_text(
        json.dumps(
            {
                "command": "PYTHONPATH=src python bench/distill.py"
                + (
                    " --quick"
                    if args.quick
                    else f" --steps {steps} --teacher-steps {teacher_steps}"
                ),
                "machine": platform.platform(),
                "student": sft,
                "teacher": {
                    "path": str(teacher),
                    "orarl_steps": teacher_steps,
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
