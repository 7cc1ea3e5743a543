"""Async RL against the synchronous loop on the same cores: steps per second and idle time.

Each variant trains the quickstart recipe (OraRL on the tiny Qwen3-VL, synthetic
temporal-grounding videos) for `--steps` steps in a subprocess of its own, on the same
cores, one after another, never two at once:

- `sync, 1 thread` and `sync, 2 threads`: `rollout.mode: sync`, `trainer.cpu_threads` 1, 2;
- `async, staleness k` (k = 0, 1, 2): the trainer on one thread and core and one rollout
  worker on the other (`rollout.worker_threads: 1`, pinned by `rollout.pin_cores`);
  `unpinned`: the same at staleness 1 where the scheduler places them;
- `async, ..., oversample 2[, continue]`: the same with over-sampled rounds
  (`rollout.oversample: 2`, `rollout.partial` restart or continue; docs/async.md#the-tail).

The model is the quickstart's random-init Qwen3-VL edited by `bench/long_tail.py` so that
its response lengths are geometric (mean about 12 tokens) as a trained policy's vary,
instead of every row running to the budget: at 16 tokens most rows hit the budget (no
tail), at 96 the longest row of a step is several times the mean.

Steps per second come from the steps after the first two (the workers' start and the
first draws), as 1 / mean(`time/step`). Every variant runs `--repeats` times (3), the
repeats interleaved (all variants once, then again), and the run of median steps/s is
kept, with the range: the same variant's speed drifts by up to 1.6x between minutes on
this machine's shared cores, so one run per variant compared noise. Idle fractions: for sync, the optimizer idles
while the step decodes, generates and scores (`trainer idle`), and generation idles
during the update (`rollout idle`); for async the loop's `async/trainer_idle` and
`async/rollout_idle`. The response budget (`rollout.max_new_tokens`) sets the balance
between generation and update, so every variant runs at each `--tokens` value. The
speedup is async's steps/s over the faster sync run at the same budget.

    python bench/async.py            # ~22 minutes on 2 cores; writes bench/results/async.json
    python bench/async.py --tokens 12  # one budget (~8 minutes): replaces only its rows
    python bench/async.py --learning # the seeing task: ~25 minutes, adds its rows to the file
    python bench/async.py --contention  # two sync runs side by side: what the cores allow

`--learning` runs the quickstart's pipeline (`bench/learning.py`'s `prepare`: the warmed
tiny model, 256 + 32 videos, 800 SFT steps), then 400 OraRL steps from the SFT model sync
(one thread) and async at staleness 1 (trainer and worker on one core each), saving every
50, and evaluates both greedily on the real, frozen, reversed and shuffled validation
videos: mIoU and video gains after equal steps (the final models) and after equal wall
time (each arm's last checkpoint within the faster arm's training wall time), and plots
both arms' reward by step and by wall time (`bench/results/async_curves.png`).
    python bench/async.py --quick --out /tmp/async.json  # 3 steps, 3 variants: a smoke run

The rollout worker counts and staleness this measures are the ones `docs/async.md` shows.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import harness
import long_tail
from harness import ROOT, markdown_table, parse_args, write_marked, write_results

PAGE = ROOT / "docs" / "async.md"  # its table sits between this script's markers
COLUMNS = [
    "variant",
    "max_new_tokens",
    "steps_per_s",
    "range",
    "speedup_vs_best_sync",
    "trainer_idle",
    "rollout_idle",
    "staleness_mean",
    "length_mean",
]

ASYNC = ["rollout.mode=async", "trainer.cpu_threads=1", "rollout.worker_threads=1"]
OVERSAMPLED = ["rollout.oversample=2"]
VARIANTS: dict[str, list[str]] = {
    "sync, 1 thread": ["rollout.mode=sync", "trainer.cpu_threads=1"],
    "sync, 2 threads": ["rollout.mode=sync", "trainer.cpu_threads=2"],
    **{f"async, staleness {k}": [*ASYNC, f"rollout.max_staleness={k}"] for k in (0, 1, 2)},
    # the scheduler's placement instead of a core each (rollout.pin_cores)
    "async, staleness 1, unpinned": [*ASYNC, "rollout.max_staleness=1", "rollout.pin_cores=false"],
    "async, staleness 1, oversample 2": [*ASYNC, "rollout.max_staleness=1", *OVERSAMPLED],
    "async, staleness 1, oversample 2, continue": [
        *ASYNC,
        "rollout.max_staleness=1",
        *OVERSAMPLED,
        "rollout.partial=continue",
    ],
    "async, staleness 2, oversample 2, continue": [
        *ASYNC,
        "rollout.max_staleness=2",
        *OVERSAMPLED,
        "rollout.partial=continue",
    ],
}
# The policy's mean response length (`long_tail`): lengths vary as a trained policy's do,
# so the longest row of a step is several times the mean (Relax measured 6.6x on
# Qwen3-VL-4B); a random-init model would write every row to the budget.
MEAN_TOKENS = 12
WARMUP_STEPS = 2
SYNC_GENERATION = ("time/decode", "time/rollout", "time/reward")


def prepare(work: Path) -> None:
    """The quickstart's model (random init, vision warm-up skipped, `long_tail` lengths)
    and data, built once."""
    if (work / "data" / "train.jsonl").exists():
        return
    harness.videorl("make-tiny", work / "model", "--arch", "qwen3_vl")
    edit = [str(work / "model"), "--mean-tokens", str(MEAN_TOKENS)]
    if harness.IN_PROCESS:
        long_tail.main(edit)
    else:
        subprocess.run(
            [sys.executable, str(Path(__file__).with_name("long_tail.py")), *edit], check=True
        )
    harness.videorl(
        *["synth", "--out", work / "data", "--families", "temporal_grounding"],
        *["--tg-events", "appear", "--n", "64", "--seed", "0", "--val", "8"],
    )


def _slug(name: str) -> str:
    return name.replace(", ", "-").replace(" ", "_")


def run_variant(
    work: Path, name: str, tokens: int, steps: int, suffix: str = ""
) -> list[dict[str, Any]]:
    """The metrics rows of one training run."""
    out = work / "runs" / f"{_slug(name)}-{tokens}{suffix}"
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    overrides = [
        f"model.path={work}/model",
        f"data.train={work}/data/train.jsonl",
        "data.val=null",
        f"trainer.output_dir={out}",
        f"trainer.steps={steps}",
        "trainer.save_every=0",
        "trainer.val_every=0",
        "trainer.tensorboard=false",
        f"rollout.max_new_tokens={tokens}",
        *VARIANTS[name],
    ]
    harness.videorl_at_root("train", "quickstart", *overrides, "--overwrite", env=env)
    from videorl.trainer.metrics import read_metrics

    return list(read_metrics(out / "metrics.jsonl"))


def summarise(name: str, tokens: int, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Steps/s and idle fractions over the steps after the warm-up."""
    steady = rows[WARMUP_STEPS:] or rows
    step_s = statistics.fmean(r["time/step"] for r in steady)
    if name.startswith("sync"):
        generation = statistics.fmean(sum(r.get(k, 0.0) for k in SYNC_GENERATION) for r in steady)
        update = statistics.fmean(r.get("time/update", 0.0) for r in steady)
        trainer_idle, rollout_idle = generation / step_s, update / step_s
        staleness = 0.0
    else:
        trainer_idle = statistics.fmean(r["async/trainer_idle"] for r in steady)
        rollout_idle = statistics.fmean(r["async/rollout_idle"] for r in steady)
        staleness = statistics.fmean(r["async/staleness_mean"] for r in steady)
    return {
        "variant": name,
        "max_new_tokens": tokens,
        "steps_per_s": round(1.0 / step_s, 3),
        "step_s": round(step_s, 3),
        "trainer_idle": round(trainer_idle, 3),
        "rollout_idle": round(rollout_idle, 3),
        "staleness_mean": round(staleness, 2),
        "reward_mean": round(statistics.fmean(r["reward/mean"] for r in rows), 3),
        "length_mean": round(statistics.fmean(r["response/length_mean"] for r in steady), 1),
        "cut_groups": round(statistics.fmean(r.get("async/cut_groups", 0.0) for r in steady), 2),
        "stages_s": {
            key.split("/", 1)[1]: round(statistics.fmean(r.get(key, 0.0) for r in steady), 3)
            for key in sorted({k for r in steady for k in r})
            if key.startswith(("time/", "async/worker_")) and key != "time/step"
        },
    }


def median_run(summaries: list[dict[str, Any]]) -> dict[str, Any]:
    """The run of median steps/s among a variant's repeats, with every run's steps/s."""
    ranked = sorted(summaries, key=lambda summary: summary["steps_per_s"])
    rates = [summary["steps_per_s"] for summary in ranked]
    return {
        **ranked[len(ranked) // 2],
        "steps_per_s_runs": rates,
        "range": f"{rates[0]}-{rates[-1]}",
    }


def with_speedups(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each row's steps/s over the faster sync run at its response budget."""
    for row in rows:
        syncs = [
            r["steps_per_s"]
            for r in rows
            if r["max_new_tokens"] == row["max_new_tokens"] and r["variant"].startswith("sync")
        ]
        row["speedup_vs_best_sync"] = round(row["steps_per_s"] / max(syncs), 2)
    return rows


LEARNING_ARMS = {
    "sync": ["rollout.mode=sync", "trainer.cpu_threads=1"],
    "async, staleness 1": VARIANTS["async, staleness 1"],
}


def seeing_task(work: Path, sft_steps: int, steps: int, save_every: int) -> dict[str, Any]:
    """SFT, then OraRL sync and async from it: both models' scores after equal steps (the
    final models) and after equal wall time (each arm's last checkpoint within the faster
    arm's training wall time), and the curves (`CURVES`)."""
    from learning import RECIPES, checkpoint_within, evaluate, prepare, start_overrides, train

    start = prepare(work / "seeing", 0, sft_steps)
    runs = {
        name: train(
            _slug(name),
            [*start_overrides(start, 0), *RECIPES["orarl"], *overrides],
            steps,
            save_every,
            work=work / "seeing",
        )
        for name, overrides in LEARNING_ARMS.items()
    }
    budget = min(sum(run["step_seconds"]) for run in runs.values())
    arms: dict[str, Any] = {"sft": evaluate(start["model"], start["val"], work / "eval-sft")}
    for name, run in runs.items():
        final = evaluate(Path(run["out"]) / "final", start["val"], work / f"eval-{_slug(name)}")
        step, path = checkpoint_within(run, budget, clock="step_seconds")
        timed = (
            final if step == steps else evaluate(path, start["val"], work / f"eval-{_slug(name)}-t")
        )
        wall = round(sum(run["step_seconds"]), 1)
        arms[name] = {**final, "train_wall_s": wall, "equal_wall": {"step": step, **timed}}
    plot_curves(runs, CURVES)
    return {"sft_steps": sft_steps, "steps": steps, "wall_budget_s": round(budget, 1), "arms": arms}


CURVES = harness.RESULTS / "async_curves.png"


def plot_curves(runs: dict[str, dict[str, Any]], path: Path, smooth: int = 20) -> None:
    """Each arm's policy reward (mean of the last `smooth` steps) by step and by wall time."""
    import matplotlib
    from learning import _mean

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (by_step, by_time) = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for name, run in runs.items():
        rewards = run["reward"]
        mean = [_mean(rewards[max(0, i - smooth + 1) : i + 1]) for i in range(len(rewards))]
        by_step.plot(range(1, len(mean) + 1), mean, label=name)
        by_time.plot(list(itertools.accumulate(run["step_seconds"])), mean, label=name)
    by_step.set_xlabel("step")
    by_time.set_xlabel("training wall time (s)")
    by_step.set_ylabel(f"policy reward (mean of last {smooth} steps)")
    for ax in (by_step, by_time):
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle("OraRL on the seeing task from the SFT model: sync vs async (staleness 1)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def learning_table(result: dict[str, Any]) -> str:
    """mIoU and video gains of the SFT start and of each arm, after equal steps and after
    equal wall time."""
    columns = ["mIoU", "gain_frozen", "gain_reversed", "gain_shuffled"]
    rows = []
    for name, arm in result["arms"].items():
        steps = result["steps"] if name != "sft" else 0
        rows.append([name, steps, *(f"{arm[c]:.1f}" for c in columns), arm.get("train_wall_s", "")])
        if "equal_wall" in arm:
            timed = arm["equal_wall"]
            label = f"{name}, within {result['wall_budget_s']} s"
            rows.append([label, timed["step"], *(f"{timed[c]:.1f}" for c in columns), ""])
    return markdown_table(["model", "step", *columns, "train wall s"], rows)


def contention(work: Path, tokens: int, steps: int) -> dict[str, Any]:
    """`sync, 1 thread` alone and two copies of it at once (each on a core of its own, if the
    machine has two that do not slow each other): how much two busy processes slow each
    other here, which bounds what overlapping generation with the update can gain."""
    alone = summarise("sync, 1 thread", tokens, run_variant(work, "sync, 1 thread", tokens, steps))
    with ThreadPoolExecutor(2) as pool:
        pair = list(
            pool.map(
                lambda name: run_variant(work, "sync, 1 thread", tokens, steps, suffix=name),
                ["a", "b"],
            )
        )
    beside = [summarise("sync, 1 thread", tokens, rows)["steps_per_s"] for rows in pair]
    return {
        "max_new_tokens": tokens,
        "alone_steps_per_s": alone["steps_per_s"],
        "beside_another_steps_per_s": beside,
        "slowdown": round(alone["steps_per_s"] / statistics.fmean(beside), 2),
    }


def table(payload: dict[str, Any]) -> str:
    """The results as the Markdown tables docs/async.md shows."""
    text = markdown_table(COLUMNS, [[row.get(c, "") for c in COLUMNS] for row in payload["rows"]])
    if "contention" in payload:
        c = payload["contention"]
        text += (
            f"\n\nTwo `sync, 1 thread` runs at once ({c['max_new_tokens']} tokens): "
            f"{' and '.join(str(v) for v in c['beside_another_steps_per_s'])} steps/s each, "
            f"against {c['alone_steps_per_s']} alone: {c['slowdown']}x slower side by side."
        )
    if "learning" in payload:
        text += "\n\nThe seeing task, after equal steps and equal wall time:\n\n"
        text += learning_table(payload["learning"])
    return text


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=24)
    parser.add_argument(
        "--repeats",
        type=int,
        default=3,
        help="runs of each variant, interleaved; the median is kept",
    )
    parser.add_argument(
        "--tokens",
        type=lambda text: [int(t) for t in text.split(",")],
        default=[12, 16, 96],
        help="comma list of rollout.max_new_tokens values; the saved rows of other values stay",
    )
    parser.add_argument(
        "--write", action="store_true", help="only put the saved results' table into docs/async.md"
    )
    parser.add_argument(
        "--learning", action="store_true", help="run the seeing-task comparison instead"
    )
    parser.add_argument(
        "--contention", action="store_true", help="measure two sync runs side by side instead"
    )
    parser.add_argument("--sft-steps", type=int, default=800)
    parser.add_argument("--rl-steps", type=int, default=400)
    parser.add_argument("--save-every", type=int, default=50, help="equal-wall-time checkpoints")
    args = parse_args(parser, "async", argv)
    saved = json.loads(args.out.read_text()) if args.out.is_file() else {}
    if args.write:
        write_marked(PAGE, "bench/async.py", table(saved))
        return saved
    if args.contention:
        result = contention(args.work / "async", 48, args.steps)
        print(result)
        write_results(args.out, {**saved, "contention": result})
        return result
    if args.learning:
        result = seeing_task(args.work / "async", args.sft_steps, args.rl_steps, args.save_every)
        print(learning_table(result))
        write_results(args.out, {**saved, "learning": result})
        return result
    variants = list(VARIANTS)
    if args.quick:  # every command in this process: no interpreter start-up per command
        harness.IN_PROCESS = True
        args.steps, args.tokens = 3, [16]
        variants = [
            "sync, 1 thread",
            "async, staleness 1",
            "async, staleness 2, oversample 2, continue",
        ]
    args.work = args.work / "async"
    prepare(args.work)
    runs: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for repeat in range(1 if args.quick else args.repeats):  # interleaved: drift hits all alike
        for tokens in args.tokens:
            for name in variants:
                metrics = run_variant(args.work, name, tokens, args.steps, suffix=f"-r{repeat}")
                runs.setdefault((name, tokens), []).append(summarise(name, tokens, metrics))
                print(runs[name, tokens][-1], flush=True)
    measured = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    rows = [{**median_run(summaries), "measured": measured} for summaries in runs.values()]
    kept = {k: saved[k] for k in ("learning", "contention") if k in saved and not args.quick}
    if not args.quick:  # rows of the budgets this run left out, from the run that measured them
        rows = sorted(
            [r for r in saved.get("rows", []) if r["max_new_tokens"] not in args.tokens] + rows,
            key=lambda row: row["max_new_tokens"],
        )
    payload = {
        **kept,
        "cores": len(os.sched_getaffinity(0)),
        "steps": args.steps,
        "repeats": 1 if args.quick else args.repeats,
        "warmup_steps": WARMUP_STEPS,
        "rows": with_speedups(rows),
    }
    print(table(payload))
    write_results(args.out, payload)
    return payload


if __name__ == "__main__":
    main()
