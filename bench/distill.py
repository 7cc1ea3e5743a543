"""On-policy distillation on the seeing task, CPU: OPDVR vs OPD vs GRPD vs GRPO.

Student: the quickstart's SFT model (bench/learning.py's start). Teacher: that SFT model
trained further with OraRL for `--teacher-steps` (more than the students get), so it shares
the tokenizer and sees the video better. Each student trains `--steps` on the same data,
seed and learning rate and is scored like bench/learning.py: greedy mIoU on the validation
videos and the video gain against frozen, reversed and shuffled copies, at equal steps and
at equal CPU time. Writes bench/results/distill.json and bench/results/distill.png.

    PYTHONPATH=src python bench/distill.py [--steps 150] [--teacher-steps 300] [--quick]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from learning import (
    PLAIN,
    RECIPES,
    RESULTS,
    ROOT,
    WORK,
    evaluate,
    markdown,
    prepare,
    saved_table,
    score_runs,
    start_overrides,
    summarize,
    train,
    write_results,
    write_tables,
)

STUDENT_RECIPES: dict[str, list[str]] = {
    "opdvr": ["algorithm.estimator=opdvr", *PLAIN],
    "opd": ["algorithm.estimator=opd", *PLAIN],
    "grpd": ["algorithm.estimator=grpd", *PLAIN],
    "grpo": ["algorithm.estimator=grpo", *PLAIN],
}


def teacher(overrides: list[str], steps: int, save_every: int) -> dict:
    """The SFT start + OraRL for `steps`; reused when a finished run of that length exists."""
    out = WORK / f"teacher-orarl-{steps}"
    metrics = out / "metrics.jsonl"
    if not ((out / "final" / "config.json").is_file() and metrics.is_file()):
        train(out.name, [*overrides, *RECIPES["orarl"]], steps, save_every)
    from videorl.trainer.metrics import read_metrics

    rows = read_metrics(metrics)
    return {
        "path": str(out / "final"),
        "orarl_steps": steps,
        "minutes": sum(r["time/step"] for r in rows) / 60,
        "cpu_minutes": sum(r["time/step_cpu"] for r in rows) / 60,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--teacher-steps", type=int, default=300)
    parser.add_argument("--window", type=int, default=25)
    parser.add_argument("--save-every", type=int, default=25, help="equal-time checkpoints")
    parser.add_argument("--sft-steps", type=int, default=800)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--students", default=",".join(STUDENT_RECIPES))
    parser.add_argument("--quick", action="store_true", help="a smoke run: 20 SFT, 6 RL steps")
    parser.add_argument("--table", action="store_true", help="print the saved results' table")
    parser.add_argument("--write", action="store_true", help="put it in docs/performance.md")
    args = parser.parse_args()
    path = RESULTS / f"distill{'_quick' if args.quick else ''}.json"
    if args.table or args.write:
        print(saved_table(path))
        if args.write:
            write_tables(path, {ROOT / "docs" / "performance.md": False})
        return
    steps, teacher_steps, window, save_every, sft_steps = (
        (6, 6, 2, 3, 20)
        if args.quick
        else (args.steps, args.teacher_steps, args.window, args.save_every, args.sft_steps)
    )
    start = prepare(WORK, args.seed, sft_steps)
    base = start_overrides(start, args.seed)
    before = evaluate(start["model"], start["val"], WORK / f"eval-sft-{sft_steps}")
    teacher_run = teacher(base, teacher_steps, save_every)
    teacher_run["scores"] = evaluate(teacher_run["path"], start["val"], WORK / "eval-teacher")
    runs = {}
    for name in args.students.split(","):
        overrides = [*base, f"model.teacher_path={teacher_run['path']}", *STUDENT_RECIPES[name]]
        runs[name] = train(f"distill-{name}", overrides, steps, save_every)
    budget = score_runs(runs, start["val"])
    table = summarize(runs, window)
    command = "PYTHONPATH=src python bench/distill.py" + (
        " --quick" if args.quick else f" --steps {steps} --teacher-steps {teacher_steps}"
    )
    payload = {
        "command": command,
        "start": start,
        "teacher": teacher_run,
        "before": before,
        "steps": steps,
        "window": window,
        "equal_time_budget_s": budget,
        "table": table,
    }
    write_results(path, payload, runs, "Students of an SFT + OraRL teacher (seeing task), CPU")
    print(markdown(table, before, window))
    print(f"teacher ({teacher_steps} OraRL steps): {Path(teacher_run['path'])}")


if __name__ == "__main__":
    main()
