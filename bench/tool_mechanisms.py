"""One comparison per agent mechanism of issue 49 on a CPU task built so that it matters
(`bench/tools.py --mechanisms`, docs/tools.md "The mechanism arms").

- **parallel** (ParaVT's parallel crops, `configs/paravt_quickstart.yaml`): a two-event
  task, "do the two shapes that flash have the same colour?" (yes / no; blind best 50%):
  an 8 s video with one shape on screen for 1 s in its first half and one in its second,
  shown at one frame per 4 s, so the prompt's frames miss both flashes in most videos and
  the answer needs a look at both halves. Arms: up to 4 crop_video calls run in one turn
  (`rollout.max_calls_per_turn=4`) against one call a turn (`=1`: the second half costs a
  second model turn).
- **turns** (FrameThinker's per-turn credit, `configs/framethinker_quickstart.yaml`): the
  synthetic video-QA set (`videorl synth --families video_qa`: "which colour appears
  first" needs a selection of the first second), select_frames / get_frame_number;
  arms `algorithm.turn_rewards=true` against one advantage per row.

Both arms of a mechanism start from the same model and data and differ only in that key.
Each RL model is evaluated greedily with its tools (`videorl eval --tools`, every tool's
media under each video control too) and without them: accuracy on the real videos, on
each control, and the gain over the frozen control.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from harness import in_process, videorl

from videorl.data.families import Family
from videorl.data.loaders import write_records
from videorl.data.records import ChoiceAnswer, TaskRecord
from videorl.data.synth_scene import COLORS, Placed, distinct, place
from videorl.data.synth_tasks import frame_size, large_size, save_video, shape

Command = Callable[..., float]  # `videorl *args`, returning its wall seconds
CONTROLS = ("frozen", "reversed", "shuffled")
FAMILY = "video_qa"
TWO_EVENTS_DURATION = 8.0  # seconds; one flash of 1 s in each half
TWO_EVENTS_VIDEO = [  # one frame per 4 s: 2 prompt frames, which miss 1 s flashes
    "video.fps=0.25",
    "video.min_frames=2",
    "video.max_frames=2",
    "data.frame_budgets=[]",
]
MECHANISMS: dict[str, dict[str, Any]] = {
    "parallel": {
        "recipe": "paravt_quickstart",
        "data": "two_events",
        "video": TWO_EVENTS_VIDEO,
        "arms": {"parallel": [], "one_per_turn": ["rollout.max_calls_per_turn=1"]},
        "tools": "crop_video",
        "modules": "videorl.rollout.tools.longvt",
    },
    "turns": {
        "recipe": "framethinker_quickstart",
        "data": "video_qa",
        "video": [],
        "arms": {"turn_credit": [], "row_credit": ["algorithm.turn_rewards=false"]},
        "tools": "select_frames,get_frame_number",
        "modules": "videorl.rollout.tools.framethinker",
    },
}


def two_event_record(rng: np.random.Generator, rid: str, out: Path) -> TaskRecord:
    """One "same colour?" video: shape 1 on screen over [a, a + 1) s, a in [0.5, 2.5], shape 2
    over [b, b + 1), b in [4.5, 6.5] (half-second grid); the colours are equal half the time."""
    width, height = frame_size(rng)
    size = large_size(rng, width, height)
    first_colour, other = distinct(rng, list(COLORS), 2)
    same = bool(rng.integers(2))
    starts = (float(rng.integers(1, 6)) / 2, 4.0 + float(rng.integers(1, 6)) / 2)
    items = []
    for colour, _ in zip((first_colour, first_colour if same else other), starts, strict=True):
        x, y = place(rng, size, height, width, [])
        items.append(Placed(shape(rng), colour, x, y, size))

    def at(t: float) -> list[Placed]:
        return [item for item, s in zip(items, starts, strict=True) if s <= t < s + 1.0]

    media = save_video(out, rid, width, height, TWO_EVENTS_DURATION, at)
    return TaskRecord(
        id=rid,
        family=Family("video_qa"),
        problem="Two shapes flash on screen, one after the other. Do they have the same colour?",
        answer=ChoiceAnswer("A" if same else "B"),
        source="bench-two-events",
        video=media,
        duration=TWO_EVENTS_DURATION,
        options=("yes", "no"),
        subtype="same_colour",
        width=width,
        height=height,
        extra={"flashes": [[s, s + 1.0] for s in starts]},
    )


def write_two_events(out: Path, n: int, val: int, seed: int) -> dict[str, str]:
    """`n` training and `val` validation two-event records under `out` (made once)."""
    train, valid = out / "train.jsonl", out / "val.jsonl"
    if not valid.is_file():
        rng = np.random.default_rng(seed)
        records = [two_event_record(rng, f"two-{k:04d}", out) for k in range(n + val)]
        write_records(train, records[:n])
        write_records(valid, records[n:])
    return {"train": str(train), "val": str(valid)}


def run_once(command: Command, out: Path, *args: object) -> float:
    """`command(*args)` with outputs in `out`, unless an earlier run finished there (its
    `seconds.txt`, as `harness.run_once`); its wall seconds."""
    timing = out / "seconds.txt"
    if not timing.is_file():
        seconds = command(*args)
        timing.write_text(f"{seconds:.1f}\n")
    return float(timing.read_text())


def write_video_qa(out: Path, n: int, val: int, seed: int, command: Command) -> dict[str, str]:
    if not (out / "val.jsonl").is_file():
        command(
            "synth", "--out", out, "--families", FAMILY, "--n", n, "--val", val, "--seed", seed,
        )  # fmt: skip
    return {"train": str(out / "train.jsonl"), "val": str(out / "val.jsonl")}


def start_model(work: Path, seed: int, command: Command) -> str:
    """The arms' start: a random-init `videorl make-tiny` Qwen3-VL, made once."""
    model = work / "model"
    if not (model / "config.json").is_file():
        command("make-tiny", model, "--arch", "qwen3_vl", "--seed", seed)
    return str(model)


QUICK = ["data.prompts_per_step=1", "rollout.n=2", "rollout.max_new_tokens=16"]


def train_arm(
    mechanism: str,
    arm: str,
    model: str,
    data: dict[str, str],
    work: Path,
    steps: int,
    seed: int,
    extra: list[str],
    command: Command,
) -> dict[str, Any]:
    """`videorl train <recipe>` with the arm's overrides (reused when `work/` has it)."""
    spec = MECHANISMS[mechanism]
    out = work / f"rl-{mechanism}-{arm}-{steps}-seed{seed}"
    seconds = run_once(
        command, out, "train", spec["recipe"], f"model.path={model}", f"data.train={data['train']}",
        *spec["video"], *spec["arms"][arm], *extra, f"trainer.output_dir={out}",
        f"trainer.steps={steps}", f"trainer.save_every={steps}", "trainer.tensorboard=false",
        f"trainer.seed={seed}", f"data.seed={seed}", "--overwrite",
    )  # fmt: skip
    return rl_run(out, seconds)


def rl_run(out: Path, seconds: float) -> dict[str, Any]:
    """A finished RL run in `out`: its final model, wall and CPU seconds, and per step its
    reward and tool use (calls, errors, turns per row)."""
    from videorl.trainer.metrics import read_metrics

    rows = read_metrics(out / "metrics.jsonl")
    return {
        "model": str(out / "final"),
        "seconds": seconds,
        "cpu_seconds": sum(r["time/step_cpu"] for r in rows),
        "reward": [r.get("reward/mean") for r in rows],
        "calls_per_row": [r.get("tools/calls_per_row", 0.0) for r in rows],
        "errors_per_row": [r.get("tools/errors_per_row", 0.0) for r in rows],
        "turns_mean": [r.get("tools/turns_mean", 1.0) for r in rows],
    }


def evaluate_arm(
    mechanism: str, model: str, val: str, out: Path, max_new_tokens: int, command: Command
) -> dict[str, float]:
    """Greedy accuracy with the mechanism's tools (real videos and each control, the tools'
    media under the control too) and without them, and the calls per answer."""
    spec = MECHANISMS[mechanism]
    command(
        "eval", "--model", model, "--benchmark", val, "--out", out, "--tools", spec["tools"],
        "--tool-modules", spec["modules"], "--max-turns", 3, "--max-new-tokens", max_new_tokens,
        "--max-total-tokens", 1024, "--controls", ",".join(CONTROLS), "--overwrite",
    )  # fmt: skip
    metrics = json.loads((out / "metrics.json").read_text())
    tools, use = metrics["tools"], metrics["tools"]["use"]
    scores = {
        "accuracy_with_tools": tools["with_tools"][FAMILY]["accuracy"],
        "accuracy_without_tools": tools["without_tools"][FAMILY]["accuracy"],
        "calls_per_answer": use.get("calls_per_answer", 0.0),
        "errors_per_answer": use.get("errors_per_answer", 0.0),
    }
    for control in CONTROLS:
        scores[control] = metrics["controls"][control]["families"][FAMILY]["accuracy"]
    scores["gain_vs_frozen"] = scores["accuracy_with_tools"] - scores["frozen"]
    return scores


def run_mechanisms(
    work: Path,
    steps: int,
    n: int,
    val: int,
    seed: int,
    window: int,
    quick: bool = False,
    model: str | None = None,
) -> list[dict[str, Any]]:
    """Every mechanism's arms, trained and evaluated: one row per arm, from `model` (a
    checkpoint that already calls the tools; default a random-init tiny model). `quick`: one
    prompt of two rows a step, 16-token turns, a smoke run whose numbers mean nothing."""
    command = in_process if quick else videorl
    model = model or start_model(work, seed, command)
    data = {
        "two_events": write_two_events(work / "two_events", n, val, seed),
        "video_qa": write_video_qa(work / "video_qa", n, val, seed, command),
    }
    rows = []
    for mechanism, spec in MECHANISMS.items():
        task = data[spec["data"]]
        for arm in spec["arms"]:
            extra = QUICK if quick else []
            run = train_arm(mechanism, arm, model, task, work, steps, seed, extra, command)
            folder = work / f"eval-{mechanism}-{arm}"
            tokens = 16 if quick else 96
            scores = evaluate_arm(mechanism, run["model"], task["val"], folder, tokens, command)
            rows.append(
                {
                    "mechanism": mechanism,
                    "arm": arm,
                    "reward_first": _mean(run["reward"][:window]),
                    "reward_last": _mean(run["reward"][-window:]),
                    "calls_last": _mean(run["calls_per_row"][-window:]),
                    "eval": scores,
                    "cpu_minutes": run["cpu_seconds"] / 60,
                    "rl": run,
                }
            )
    return rows


def _mean(values: list[float | None]) -> float:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else float("nan")


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| mechanism | arm | reward, first | last | calls/row, last | eval acc with tools | "
        "without | " + " | ".join(CONTROLS) + " | gain vs frozen | train CPU min |",
        "|---|---|---|---|---|---|---|" + "---|" * len(CONTROLS) + "---|---|",
    ]
    for row in rows:
        e = row["eval"]
        controls = " | ".join(f"{e[c]:.1f}" for c in CONTROLS)
        lines.append(
            f"| {row['mechanism']} | {row['arm']} | {row['reward_first']:.3f} |"
            f" {row['reward_last']:.3f} | {row['calls_last']:.2f} |"
            f" {e['accuracy_with_tools']:.1f} | {e['accuracy_without_tools']:.1f} | {controls} |"
            f" {e['gain_vs_frozen']:+.1f} | {row['cpu_minutes']:.1f} |"
        )
    return "\n".join(lines)
