"""On-policy distillation on CPU: OPDVR vs OPD vs GRPO, curves side by side.

The teacher is the OraRL-trained tiny model of bench/learning.py (trained here first if it
is missing); the student is a fresh tiny model of the same family and tokenizer (another
init seed). Same synthetic temporal-grounding task and seed for all three. Writes
bench/results/distill.json and bench/results/distill.png.

    PYTHONPATH=src python bench/distill.py [--steps 150] [--teacher-steps 300] [--quick]
"""

from __future__ import annotations

import argparse
import json
import platform
from pathlib import Path

from learning import RECIPES, RESULTS, WORK, plot, prepare, print_table, summarize, train_curve

STUDENT_RECIPES: dict[str, list[str]] = {
    "opdvr": ["algorithm.estimator=opdvr"],
    "opd": ["algorithm.estimator=opd"],
    "grpo": ["algorithm.estimator=grpo"],
}
PLAIN = ["algorithm.annotation_rows=false", "algorithm.pruning.enabled=false"]


def main() -> None:
    from videorl.models.tiny import build_tiny_model

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--teacher-steps", type=int, default=300)
    parser.add_argument("--window", type=int, default=25)
    parser.add_argument(
        "--quick", action="store_true", help="a 10-step smoke run (teacher 10 steps)"
    )
    args = parser.parse_args()
    steps, teacher_steps, window = (
        (10, 10, 3) if args.quick else (args.steps, args.teacher_steps, args.window)
    )
    model, data = prepare(WORK, seed=0)
    base = [f"data.train={data}"]
    teacher = WORK / "orarl" / "final"
    if args.quick or not (teacher / "config.json").is_file():
        teacher = Path(
            train_curve("orarl", [f"model.path={model}", *base, *RECIPES["orarl"]], teacher_steps)[
                "final"
            ]
        )
    student = WORK / "student"
    if not (student / "config.json").is_file():
        build_tiny_model("qwen2_5_vl", student, seed=1)
    curves = {
        name: train_curve(
            f"distill-{name}",
            [f"model.path={student}", f"model.teacher_path={teacher}", *base, *PLAIN, *overrides],
            steps,
        )
        for name, overrides in STUDENT_RECIPES.items()
    }
    table = summarize(curves, window)
    print_table(table, window)
    suffix = "_quick" if args.quick else ""
    plot(
        curves,
        RESULTS / f"distill{suffix}.png",
        "Student distilled from the OraRL-trained tiny teacher",
    )
    (RESULTS / f"distill{suffix}.json").write_text(
        json.dumps(
            {
                "command": "PYTHONPATH=src python bench/distill.py"
                + (" --quick" if args.quick else f" --steps {steps}"),
                "machine": platform.platform(),
                "teacher": str(teacher),
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
