"""Tool use learned on the CPU: tools_quickstart from a tool-trajectory SFT model against the
same recipe without tools from a direct-answer SFT model (issue 36, docs/tools.md).

The task is `configs/tools_quickstart.yaml`'s: synthetic "when does the shape appear"
videos of 8-16 s whose event lasts 1-1.5 s, shown to the model at one frame per 4 s (2-4
frames), so the prompt's frames miss the event in about two videos of three; `get_clip`
re-decodes the file at a higher rate. A random tiny model never writes a valid
`<tool_call>`, so both arms start from SFT on the same records, seed and steps:

- tools: `sft.target=tool_trajectory` (a get_clip call over the whole video, the clip, the
  answer), then `videorl train tools_quickstart`;
- direct: `sft.target=annotation` (the answer) from prompts without tools, then the same
  recipe with `rollout.tools=[]`.

Each SFT and RL model is evaluated greedily on the validation videos with
`videorl eval --tools get_clip` (mIoU with the tool loop and without tools, calls per
answer). Reported: tools/calls_per_row and the policy reward over the first and last
`--window` RL steps, and the eval scores. Writes bench/results/tools.json (tools_quick.json
with --quick) and prints the markdown table.

    PYTHONPATH=src python bench/tools.py [--sft-steps 200] [--rl-steps 40] [--quick]
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
FAMILY = "temporal_grounding"
# tools_quickstart's prompt video: one frame per 4 s, 2-4 frames, small frames
VIDEO = [
    "video.fps=0.25",
    "video.min_frames=2",
    "video.max_frames=4",
    "video.min_pixels=3136",
    "video.max_pixels=12544",
]
ARMS: dict[str, dict[str, list[str]]] = {
    "tools": {
        "sft": ["sft.target=tool_trajectory", "rollout.tools=[get_clip]"],
        "rl": [],  # tools_quickstart as published: rollout.tools=[get_clip]
    },
    "direct": {
        "sft": ["sft.target=annotation", "rollout.tools=[]"],
        "rl": ["rollout.tools=[]"],
    },
}


def videorl(*args: object) -> float:
    """One `videorl` command, as a user types it; returns its wall seconds."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "videorl", *map(str, args)], check=True)
    return time.perf_counter() - start


def prepare(work: Path, seed: int, n: int, val: int, warmup: int) -> dict[str, str]:
    """The tiny Qwen3-VL (vision warm-up, as `make quickstart`) and the data, reused when
    already under `work/`."""
    model, data = work / f"model-warmup{warmup}", work / f"data-{n}-{val}"
    if not (model / "config.json").is_file():
        warm = ["--vision-warmup", warmup] if warmup else []
        videorl("make-tiny", model, "--arch", "qwen3_vl", *warm, "--seed", seed)
    if not (data / "val.jsonl").is_file():
        videorl(
            "synth", "--out", data, "--families", FAMILY, "--tg-events", "appear",
            "--n", n, "--val", val, "--seed", seed,
        )  # fmt: skip
    return {"model": str(model), "train": str(data / "train.jsonl"), "val": str(data / "val.jsonl")}


def read_rows(out: Path) -> list[dict[str, Any]]:
    from videorl.trainer.metrics import read_metrics

    return read_metrics(out / "metrics.jsonl")


def sft(arm: str, start: dict[str, str], work: Path, steps: int, seed: int) -> dict[str, Any]:
    """`videorl sft sft_quickstart` on tools_quickstart's video with the arm's target
    (reused when `work/` already has it)."""
    out = work / f"sft-{arm}-{steps}-seed{seed}"
    timing = out / "seconds.txt"
    if not timing.is_file():
        seconds = videorl(
            "sft", "sft_quickstart", f"model.path={start['model']}",
            f"data.train={start['train']}", "data.val=null", *VIDEO, *ARMS[arm]["sft"],
            "sft.max_response_tokens=512", f"trainer.output_dir={out}", f"trainer.steps={steps}",
            f"trainer.save_every={steps}", "trainer.val_every=0", "trainer.tensorboard=false",
            f"trainer.seed={seed}", f"data.seed={seed}", "--overwrite",
        )  # fmt: skip
        timing.write_text(f"{seconds:.1f}\n")
    seconds = float(timing.read_text())
    rows = read_rows(out)
    return {
        "model": str(out / "final"),
        "seconds": seconds,
        "cpu_seconds": sum(r["time/step_cpu"] for r in rows),
        "loss": [r["sft/loss"] for r in rows],
    }


def rl(
    arm: str, model: str, start: dict[str, str], work: Path, steps: int, seed: int, lr: float
) -> dict:
    """`videorl train tools_quickstart` from the arm's SFT model (no tools for `direct`)."""
    out = work / f"rl-{arm}"
    seconds = videorl(
        "train", "tools_quickstart", f"model.path={model}", f"data.train={start['train']}",
        "data.val=null", *ARMS[arm]["rl"], f"optim.lr={lr}", f"trainer.output_dir={out}",
        f"trainer.steps={steps}",
        f"trainer.save_every={steps}", "trainer.val_every=0", "trainer.tensorboard=false",
        f"trainer.seed={seed}", f"data.seed={seed}", "--overwrite",
    )  # fmt: skip
    rows = read_rows(out)
    return {
        "model": str(out / "final"),
        "seconds": seconds,
        "cpu_seconds": sum(r["time/step_cpu"] for r in rows),
        "reward": [r.get("reward/mean") for r in rows],
        "calls_per_row": [r.get("tools/calls_per_row", 0.0) for r in rows],
        "errors_per_row": [r.get("tools/errors_per_row", 0.0) for r in rows],
        "turns_mean": [r.get("tools/turns_mean", 1.0) for r in rows],
    }


def evaluate(model: str, val: str, out: Path, max_turns: int) -> dict[str, float]:
    """Greedy mIoU with the tool loop and without tools, and the calls per answer."""
    seconds = videorl(
        "eval", "--model", model, "--benchmark", val, "--out", out, "--tools", "get_clip",
        "--max-turns", max_turns, "--max-new-tokens", 96, "--max-total-tokens", 512,
        "--overwrite",
    )  # fmt: skip
    entry = json.loads((out / "metrics.json").read_text())["tools"]
    use = entry["use"]
    return {
        "mIoU_with_tools": entry["with_tools"][FAMILY]["mIoU"],
        "mIoU_without_tools": entry["without_tools"][FAMILY]["mIoU"],
        "calls_per_answer": use.get("calls_per_answer", 0.0),
        "errors_per_answer": use.get("errors_per_answer", 0.0),
        "answers_with_calls": use.get("answers_with_calls", 0.0),
        "seconds": seconds,
    }


def _mean(values: list[float | None]) -> float:
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else math.nan


def summarize(arms: dict[str, dict[str, Any]], window: int) -> list[dict[str, Any]]:
    """One row per arm: calls per row and reward over the first and last `window` RL steps,
    and the greedy evals of its SFT and RL models."""
    table = []
    for name, arm in arms.items():
        run = arm["rl"]
        table.append(
            {
                "arm": name,
                "calls_first": _mean(run["calls_per_row"][:window]),
                "calls_last": _mean(run["calls_per_row"][-window:]),
                "errors_first": _mean(run["errors_per_row"][:window]),
                "errors_last": _mean(run["errors_per_row"][-window:]),
                "reward_first": _mean(run["reward"][:window]),
                "reward_last": _mean(run["reward"][-window:]),
                "sft_eval": arm["sft_eval"],
                "rl_eval": arm["rl_eval"],
                "cpu_minutes": (arm["sft"]["cpu_seconds"] + run["cpu_seconds"]) / 60,
            }
        )
    return table


def markdown(table: list[dict[str, Any]], window: int) -> str:
    lines = [
        (
            f"| arm | calls/row (errors), first {window} RL steps | last {window} | reward, first "
            f"{window} | last {window} | eval mIoU with tools: SFT | RL | without tools: SFT |"
            " RL | calls/answer: SFT | RL | train CPU min |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in table:
        sft_eval, rl_eval = row["sft_eval"], row["rl_eval"]
        lines.append(
            f"| {row['arm']} | {row['calls_first']:.2f} ({row['errors_first']:.2f}) |"
            f" {row['calls_last']:.2f} ({row['errors_last']:.2f}) |"
            f" {row['reward_first']:.3f} | {row['reward_last']:.3f} |"
            f" {sft_eval['mIoU_with_tools']:.1f} | {rl_eval['mIoU_with_tools']:.1f} |"
            f" {sft_eval['mIoU_without_tools']:.1f} | {rl_eval['mIoU_without_tools']:.1f} |"
            f" {sft_eval['calls_per_answer']:.2f} | {rl_eval['calls_per_answer']:.2f} |"
            f" {row['cpu_minutes']:.1f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sft-steps", type=int, default=200)
    parser.add_argument("--rl-steps", type=int, default=40)
    parser.add_argument("--window", type=int, default=10)
    parser.add_argument("--lr", type=float, default=1e-3, help="RL lr (tools_quickstart's)")
    parser.add_argument("--train", type=int, default=128, help="synthetic training videos")
    parser.add_argument("--val", type=int, default=32, help="synthetic validation videos")
    parser.add_argument("--vision-warmup", type=int, default=150)
    parser.add_argument("--max-turns", type=int, default=3, help="eval turns per answer")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", type=Path, default=Path("runs/bench-tools"))
    parser.add_argument("--out", type=Path, default=None, help="results file")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 4 SFT, 2 RL steps")
    parser.add_argument("--table", action="store_true", help="print the saved results' table")
    args = parser.parse_args(argv)
    suffix = ("_quick" if args.quick else "") + ("" if args.lr == 1e-3 else f"_lr{args.lr:g}")
    out = args.out or RESULTS / f"tools{suffix}.json"
    if args.table:
        saved = json.loads(out.read_text())
        print(markdown(saved["table"], saved["window"]))
        return
    if args.quick:
        args.sft_steps, args.rl_steps, args.window = 4, 2, 1
        args.train, args.val, args.vision_warmup, args.max_turns = 8, 4, 0, 2
    started = time.perf_counter()
    start = prepare(args.work, args.seed, args.train, args.val, args.vision_warmup)
    arms: dict[str, dict[str, Any]] = {}
    for name in ARMS:
        arm: dict[str, Any] = {"sft": sft(name, start, args.work, args.sft_steps, args.seed)}
        model = arm["sft"]["model"]
        arm["rl"] = rl(name, model, start, args.work, args.rl_steps, args.seed, args.lr)
        for stage in ("sft", "rl"):
            folder = args.work / f"eval-{stage}-{name}"
            arm[f"{stage}_eval"] = evaluate(
                arm[stage]["model"], start["val"], folder, args.max_turns
            )
        arms[name] = arm
    table = summarize(arms, args.window)
    command = (
        "PYTHONPATH=src python bench/tools.py"
        + (
            " --quick"
            if args.quick
            else f" --sft-steps {args.sft_steps} --rl-steps {args.rl_steps}"
        )
        + ("" if args.lr == 1e-3 else f" --lr {args.lr:g}")
    )
    payload = {
        "command": command,
        "machine": platform.platform(),
        "settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "start": start,
        "window": args.window,
        "table": table,
        "arms": arms,
        "total_minutes": (time.perf_counter() - started) / 60,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(payload, indent=1) + "\n")
    print(markdown(table, args.window))


if __name__ == "__main__":
    main()
