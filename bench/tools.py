"""Tool use learned on the CPU: tools_quickstart from a tool-calling SFT model against the
same recipe without tools from a direct-answer SFT model (issue 36, docs/tools.md).

The task is `configs/tools_quickstart.yaml`'s: synthetic "when does the shape appear"
videos of 8-16 s whose event lasts 1-1.5 s, shown to the model at one frame per 4 s (2-4
frames), so the prompt's frames miss the event in about two videos of three; `get_clip`
re-decodes the file at up to 32 frames (2 fps over 16 s). Both arms start from the
seeing model of `bench/learning.py` (`make quickstart`'s SFT: 800 steps on prompts at
2 fps, mIoU 56), which reads times off a prompt video but has never seen a tool:

- tools: SFT on gold tool trajectories (a get_clip call over the whole video, the clip,
  the answer) for `--read-steps`, so the model learns to read the clip in the tool turn;
  then `--mix-steps` with `sft.tool_call_fraction=0.5`, half the targets answering
  directly, so it calls in about half its sampled answers; then `videorl train
  tools_quickstart`;
- direct: SFT on the direct answers from prompts without tools for the same number of
  steps, then the same recipe with `rollout.tools=[]`.

Each SFT and RL model is evaluated greedily on the validation videos with
`videorl eval --tools get_clip` (mIoU with the tool loop and without tools, calls per
answer). Reported: tools/calls_per_row and the policy reward over the first and last
`--window` RL steps, and the eval scores. Writes bench/results/tools.json (tools_quick.json
with --quick) and prints the markdown table.

    PYTHONPATH=src python bench/tools.py [--read-steps 400] [--mix-steps 60] [--rl-steps 40]

`--mechanisms` runs the arms of `bench/tool_mechanisms.py` instead (on a two-event colour
task whose four balanced options need both halves of the video: parallel crops,
sub-agents, per-turn credit of frame selection, the answer-twice reward and early exit;
frame retrieval on temporal grounding), each from the seeing model (the two-event arms:
after a reading stage of `--mech-read-steps` SFT steps on the task's direct answers)
SFT-ed on gold trajectories of its tools (`--mech-tool-sft-steps`: the two-event arms that
read their tools' frames take that many steps with a cosine decay), and stores their rows
under `mechanisms` in the same results file:

    PYTHONPATH=src python bench/tools.py --mechanisms [--mech-steps 20] [--mech-sft-steps 40]
        [--mech-tool-sft-steps N] [--mech-read-steps 300] [--mech-n 64] [--mech-val 48]
        [--mech-rl-set KEY=VALUE ...]
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path
from typing import Any

import harness
import search_exit
from harness import RESULTS, ROOT, mean_present, run_once, videorl, write_marked
from learning import CONTROLS
from learning import evaluate as evaluate_plain
from learning import prepare as seeing_start
from tool_mechanisms import (
    MECHANISMS,
    READ_TASK,
    Plan,
    check_rl_set,
    read_stage,
    rl_run,
    run_mechanism,
    task_starts,
    write_tasks,
)
from tool_mechanisms import tables as mechanisms_tables

FAMILY = "temporal_grounding"
PAGE = ROOT / "docs" / "tools.md"  # its tables sit between this script's markers
SEEING_WORK = Path("runs/bench-seeing")  # bench/learning.py's start, shared
# tools_quickstart's prompt video (one frame per 4 s, 2-4 small frames) and tool clips
VIDEO = [
    "video.fps=0.25",
    "video.min_frames=2",
    "video.max_frames=4",
    "video.min_pixels=3136",
    "video.max_pixels=12544",
    "video.tool_max_frames=32",
]
# the constant rate these stages were tuned with (sft_quickstart decays since 2026-12-07)
TOOL_SFT = [
    "sft.target=tool_trajectory",
    "rollout.tools=[get_clip]",
    "optim.schedule=constant",
    "optim.warmup_steps=5",
]
# each arm: its SFT stages (name, the step-count argument, overrides), then its RL overrides
ARMS: dict[str, dict[str, Any]] = {
    "tools": {
        "sft": [
            ("read", "read_steps", [*TOOL_SFT, "sft.tool_call_fraction=1.0"]),
            ("mix", "mix_steps", [*TOOL_SFT, "sft.tool_call_fraction=0.5", "optim.lr=1e-3"]),
        ],
        "rl": [],  # tools_quickstart as published: rollout.tools=[get_clip]
    },
    "direct": {
        "sft": [("direct", "all_steps", ["sft.target=annotation", "rollout.tools=[]"])],
        "rl": ["rollout.tools=[]"],
    },
}


def read_rows(out: Path) -> list[dict[str, Any]]:
    from videorl.trainer.metrics import read_metrics

    return read_metrics(out / "metrics.jsonl")


def sft_stage(
    name: str, model: str, start: dict[str, Any], work: Path, steps: int, seed: int, extra: list
) -> dict[str, Any]:
    """`videorl sft sft_quickstart` from `model` on tools_quickstart's video with the stage's
    overrides (reused when `work/` already has it)."""
    out = work / f"sft-{name}-{steps}-seed{seed}"
    seconds = run_once(
        out, "sft", "sft_quickstart", f"model.path={model}", f"data.train={start['train']}",
        "data.val=null", *VIDEO, *extra, "sft.max_response_tokens=1024",
        f"trainer.output_dir={out}", f"trainer.steps={steps}",
        f"trainer.save_every={steps}", "trainer.val_every=0", "trainer.tensorboard=false",
        f"trainer.seed={seed}", f"data.seed={seed}", "--overwrite",
    )  # fmt: skip
    rows = read_rows(out)
    return {
        "model": str(out / "final"),
        "seconds": seconds,
        "cpu_seconds": sum(r["time/step_cpu"] for r in rows),
        "loss": [r["sft/loss"] for r in rows],
    }


def sft(arm: str, start: dict[str, Any], work: Path, steps: dict[str, int], seed: int) -> dict:
    """The arm's SFT stages in order, each from the last one's model."""
    model, stages = start["model"], {}
    for name, count, extra in ARMS[arm]["sft"]:
        stages[name] = sft_stage(name, model, start, work, steps[count], seed, extra)
        model = stages[name]["model"]
    return {
        "model": model,
        "stages": stages,
        "cpu_seconds": sum(stage["cpu_seconds"] for stage in stages.values()),
    }


def rl(
    arm: str, model: str, start: dict[str, Any], work: Path, steps: int, seed: int, lr: float
) -> dict:
    """`videorl train tools_quickstart` from the arm's SFT model (no tools for `direct`;
    reused when `work/` already has it)."""
    out = work / f"rl-{arm}-{steps}-lr{lr:g}-seed{seed}"
    seconds = run_once(
        out, "train", "tools_quickstart", f"model.path={model}", f"data.train={start['train']}",
        "data.val=null", *ARMS[arm]["rl"], f"optim.lr={lr}", f"trainer.output_dir={out}",
        f"trainer.steps={steps}",
        f"trainer.save_every={steps}", "trainer.val_every=0", "trainer.tensorboard=false",
        f"trainer.seed={seed}", f"data.seed={seed}", "--overwrite",
    )  # fmt: skip
    return rl_run(out, seconds)


def evaluate(model: str, val: str, out: Path, max_turns: int) -> dict[str, float]:
    """Greedy mIoU with the tool loop (on the real videos and on each video control, the
    tools' clips under the same control) and without tools, and the calls per answer."""
    seconds = videorl(
        "eval", "--model", model, "--benchmark", val, "--out", out, "--tools", "get_clip",
        "--max-turns", max_turns, "--max-new-tokens", 96, "--max-total-tokens", 1024,
        "--controls", ",".join(CONTROLS), "--overwrite",
    )  # fmt: skip
    metrics = json.loads((out / "metrics.json").read_text())
    entry, use = metrics["tools"], metrics["tools"]["use"]
    scores = {
        "mIoU_with_tools": entry["with_tools"][FAMILY]["mIoU"],
        "mIoU_without_tools": entry["without_tools"][FAMILY]["mIoU"],
        "calls_per_answer": use.get("calls_per_answer", 0.0),
        "errors_per_answer": use.get("errors_per_answer", 0.0),
        "answers_with_calls": use.get("answers_with_calls", 0.0),
        "seconds": seconds,
    }
    for control in CONTROLS:
        scores[control] = metrics["controls"][control]["families"][FAMILY]["mIoU"]
    return scores


def summarize(arms: dict[str, dict[str, Any]], window: int) -> list[dict[str, Any]]:
    """One row per arm: calls per row and reward over the first and last `window` RL steps,
    and the greedy evals of its SFT and RL models."""
    table = []
    for name, arm in arms.items():
        run = arm["rl"]
        table.append(
            {
                "arm": name,
                "calls_first": mean_present(run["calls_per_row"][:window]),
                "calls_last": mean_present(run["calls_per_row"][-window:]),
                "errors_first": mean_present(run["errors_per_row"][:window]),
                "errors_last": mean_present(run["errors_per_row"][-window:]),
                "reward_first": mean_present(run["reward"][:window]),
                "reward_last": mean_present(run["reward"][-window:]),
                "sft_eval": arm["sft_eval"],
                "rl_eval": arm["rl_eval"],
                "rl_plain_eval": arm.get("rl_plain_eval"),
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


def controls_markdown(table: list[dict[str, Any]]) -> str:
    """The RL models' greedy mIoU on the real videos and on each video control: the tools
    model with its tools (the clips under the control too), the direct model without."""
    lines = [
        "| RL model | real | " + " | ".join(CONTROLS) + " | gain vs frozen |",
        "|---|---|" + "---|" * len(CONTROLS) + "---|",
    ]
    for row in table:
        tools = row["arm"] == "tools"
        scores = row["rl_eval"] if tools else row["rl_plain_eval"]
        real = scores["mIoU_with_tools" if tools else "mIoU"]
        on_controls = " | ".join(f"{scores[c]:.1f}" for c in CONTROLS)
        name = "tools, with get_clip" if tools else "direct, without tools"
        gain = real - scores["frozen"]
        lines.append(f"| {name} | {real:.1f} | {on_controls} | {gain:+.1f} |")
    return "\n".join(lines)


def tables(saved: dict[str, Any]) -> str:
    """Both tables of a results file, as docs/tools.md shows them."""
    return markdown(saved["table"], saved["window"]) + "\n\n" + controls_markdown(saved["table"])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--read-steps", type=int, default=400, help="tools: SFT, every target calls"
    )
    parser.add_argument(
        "--mix-steps", type=int, default=60, help="tools: SFT, half the targets call"
    )
    parser.add_argument("--rl-steps", type=int, default=40)
    parser.add_argument("--window", type=int, default=10)
    parser.add_argument("--lr", type=float, default=2e-4, help="RL lr (tools_quickstart's)")
    parser.add_argument("--max-turns", type=int, default=3, help="eval turns per answer")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", type=Path, default=Path("runs/bench-tools"))
    parser.add_argument("--out", type=Path, default=None, help="results file")
    parser.add_argument(
        "--quick", action="store_true", help="a smoke run in this process: 1+1 SFT, 1 RL step"
    )
    parser.add_argument("--table", action="store_true", help="print the saved results' table")
    parser.add_argument("--write", action="store_true", help="write it into docs/tools.md")
    parser.add_argument(
        "--mechanisms", action="store_true", help="the agent-mechanism arms (issue 49)"
    )
    parser.add_argument("--mech-steps", type=int, default=20, help="RL steps of each arm")
    parser.add_argument(
        "--mech-sft-steps", type=int, default=40, help="SFT steps on each arm's gold targets"
    )
    parser.add_argument(
        "--mech-tool-sft-steps",
        type=int,
        default=None,
        help="SFT steps, with a cosine decay, of the two-event arms that read their tools' "
        "frames (parallel, subagents, turns); default: --mech-sft-steps at a constant rate",
    )
    parser.add_argument(
        "--mech-read-steps",
        type=int,
        default=300,
        help="SFT steps of the two-event arms' reading stage (direct answers; 0: none)",
    )
    parser.add_argument(
        "--mech-rl-set",
        action="append",
        default=[],
        type=override,
        metavar="KEY=VALUE",
        help="an override of every arm's RL (repeatable), after the recipe's and the arm's",
    )
    parser.add_argument("--mech-n", type=int, default=64, help="training videos per task")
    parser.add_argument("--mech-val", type=int, default=48, help="validation videos per task")
    args = parser.parse_args(argv)
    if args.mechanisms:
        mechanisms(args)
        return
    suffix = ("_quick" if args.quick else "") + ("" if args.lr == 2e-4 else f"_lr{args.lr:g}")
    out = args.out or RESULTS / f"tools{suffix}.json"
    if args.table or args.write:
        text = tables(json.loads(out.read_text()))
        if args.write:
            write_marked(PAGE, "bench/tools.py", text)
        print(text)
        return
    if args.quick:  # every command in this process: no interpreter start-up per command
        harness.IN_PROCESS = True
        args.read_steps, args.mix_steps, args.rl_steps, args.window, args.max_turns = 1, 1, 1, 1, 2
    started = time.perf_counter()
    if args.quick:  # a tiny start: 4 + 2 videos, no tower warm-up, 2 SFT steps
        start = seeing_start(args.work, args.seed, 2, n=4, val=2, warmup=0)
    else:
        start = seeing_start(SEEING_WORK, args.seed, 800)
    steps = {
        "read_steps": args.read_steps,
        "mix_steps": args.mix_steps,
        "all_steps": args.read_steps + args.mix_steps,  # the direct arm: as many SFT steps
    }
    arms: dict[str, dict[str, Any]] = {}
    for name in ARMS:
        arm: dict[str, Any] = {"sft": sft(name, start, args.work, steps, args.seed)}
        model = arm["sft"]["model"]
        arm["rl"] = rl(name, model, start, args.work, args.rl_steps, args.seed, args.lr)
        for stage in ("sft", "rl"):
            folder = args.work / f"eval-{stage}-{name}"
            arm[f"{stage}_eval"] = evaluate(
                arm[stage]["model"], start["val"], folder, args.max_turns
            )
        if name == "direct":  # its own setting: no tool list in the prompt
            folder = args.work / "eval-rl-direct-plain"
            arm["rl_plain_eval"] = evaluate_plain(arm["rl"]["model"], start["val"], folder)
        arms[name] = arm
    table = summarize(arms, args.window)
    command = "PYTHONPATH=src python bench/tools.py" + (
        " --quick"
        if args.quick
        else f" --read-steps {args.read_steps} --mix-steps {args.mix_steps}"
        f" --rl-steps {args.rl_steps}"
    )
    command += "" if args.lr == 2e-4 else f" --lr {args.lr:g}"
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
    print(tables(payload))


MECHANISMS_TABLE = "bench/tool_mechanisms.py"  # its table's markers in docs/tools.md


def override(text: str) -> str:
    """A `KEY=VALUE` config override, as `videorl train` takes it."""
    if "=" not in text.strip("="):
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE")
    return text


def mechanisms(args: argparse.Namespace) -> None:
    """`--mechanisms`: run the reading stage and the arms and store their rows under
    `mechanisms` in the results file (the tools-vs-direct rows of a file already there are
    kept), with `bench/search_exit.py`'s retrieval hit rates on `--mech-val` videos of the
    same kind."""
    if args.quick:
        harness.IN_PROCESS = True
        args.mech_steps, args.mech_sft_steps, args.mech_n, args.mech_val = 1, 1, 2, 1
        args.mech_read_steps = min(args.mech_read_steps, 1)
        args.mech_tool_sft_steps = args.mech_tool_sft_steps and 1
        args.window = 1
    out = args.out or RESULTS / ("tools_quick.json" if args.quick else "tools.json")
    if args.table or args.write:
        text = mechanisms_tables(json.loads(out.read_text())["mechanisms"])
        if args.write:
            write_marked(PAGE, MECHANISMS_TABLE, text)
        print(text)
        return
    rl_set = tuple(args.mech_rl_set)
    check_rl_set(rl_set)
    started = time.perf_counter()
    work = args.work / "mechanisms"
    if args.quick:  # a tiny start: 2 + 1 videos, no tower warm-up, 1 SFT step
        start = seeing_start(args.work, args.seed, 1, n=2, val=1, warmup=0)
    else:
        start = seeing_start(SEEING_WORK, args.seed, 800)
    saved = json.loads(out.read_text()) if out.is_file() else {}
    entry: dict[str, Any] = {
        "command": mechanisms_command(args),
        "machine": platform.platform(),
        "settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "steps": args.mech_steps,
        "sft_steps": args.mech_sft_steps,
        "tool_sft_steps": args.mech_tool_sft_steps,
        "read_steps": args.mech_read_steps,
        "rl_set": list(rl_set),
        "start": start,
        "window": args.window,
        "rows": [],
        "complete": False,  # until every mechanism's rows are in
    }
    saved["mechanisms"] = entry
    run = videorl if not args.quick else harness.in_process
    tasks = write_tasks(work, args.mech_n, args.mech_val, args.seed, run)
    entry["blind_best"] = {k: v["blind_best"] for k, v in tasks.items() if "blind_best" in v}
    read_model = None  # the two-event arms' start: the seeing model without a reading stage
    if args.mech_read_steps:
        read = read_stage(
            start["model"], tasks[READ_TASK], work, args.mech_read_steps, args.seed, run
        )
        entry["read"], read_model = read, read["model"]
    plan = Plan(
        work, args.mech_steps, args.mech_sft_steps, args.seed, args.window,
        task_starts(start["model"], read_model), rl_set, args.quick, run,
        args.mech_tool_sft_steps,
    )  # fmt: skip
    for name, spec in MECHANISMS.items():  # saved after each: a cut run keeps its rows
        entry["rows"] += run_mechanism(name, tasks[spec["data"]], plan, entry["rows"])
        entry["total_minutes"] = (time.perf_counter() - started) / 60
        write_json(out, saved)
    entry["search"] = search_exit.retrieval(work / "search", args.mech_val, args.seed)
    entry["complete"] = True
    write_json(out, saved)
    print(mechanisms_tables(entry))


def mechanisms_command(args: argparse.Namespace) -> str:
    """The command line that reproduces a `--mechanisms` run."""
    command = "PYTHONPATH=src python bench/tools.py --mechanisms"
    if args.quick:
        command += " --quick"
    else:
        command += f" --mech-read-steps {args.mech_read_steps} --mech-steps {args.mech_steps}"
        command += f" --mech-sft-steps {args.mech_sft_steps} --mech-n {args.mech_n}"
        command += f" --mech-val {args.mech_val} --window {args.window}"
    if args.mech_tool_sft_steps is not None:
        command += f" --mech-tool-sft-steps {args.mech_tool_sft_steps}"
    return command + "".join(f" --mech-rl-set {item}" for item in args.mech_rl_set)


def write_json(out: Path, payload: dict[str, Any]) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(payload, indent=1) + "\n")


if __name__ == "__main__":
    main()
