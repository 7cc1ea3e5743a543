"""One comparison per agent mechanism of issue 49 on a CPU task built so that it matters
(`bench/tools.py --mechanisms`, docs/tools.md "The mechanism arms").

Every arm starts from the seeing model of `bench/tools.py` (`bench/learning.py`'s SFT on
temporal-grounding prompts at 2 fps); the two-event arms from the reading stage's model
instead (`read_stage`, `--mech-read-steps`: that model SFT-ed on the task's direct answers
from the prompt video at 1 fps, 8 frames, one inside each flash, so that it reads the
colours before it learns any tool). Then `videorl sft <the mechanism's recipe>` on gold
trajectories of the mechanism's tools (`sft.target=tool_trajectory`, rollout/tools/gold.py;
VideoAuto-R1's `sft.target=answer_twice`), so that RL starts from a model that calls them
(the arms that answer from the tools' frames, `reads_tools`: `--mech-tool-sft-steps`
steps with a cosine decay, `TOOL_READ_SFT`, since the reading stage does not read a tool
turn's images); then `--mech-steps` RL steps of the recipe with the arm's overrides (and
`--mech-rl-set`'s, the same in every arm). Arms whose SFT overrides are equal share one SFT run; every run's
folder is named by a hash of what it depends on, so a run with other inputs is not reused.

- The two-event task (`two_events`, every video-QA arm): an 8 s video with one shape on
  screen for 1 s in each half ([a, a + 1), a in 0.5-2.5 s; [b, b + 1), b in 4.5-6.5 s),
  "Two shapes flash on screen, one in each half of the video. What are their colours, in
  order?" with the same four options in every record, (red or blue) then (green or
  magenta): the first half's flash picks the row and the second half's the column, and
  each split's answers are balanced over A-D, so the blind best is 25% (the tables' last
  lines say it for the validation set). The video is needed: the frozen control (the first
  frame, before both flashes) shows no colour, and the reversed one shows the second
  colour first, which no option starts with.
- **parallel** (ParaVT's parallel crops, `paravt_quickstart`): the two-event task shown at
  one frame per 4 s (2 prompt frames, at 0 and 4 s: they miss both flashes in every video),
  so the answer needs crop_video's 1 fps frames (4 per half, one inside each flash). Gold:
  crop_video of each half, both in one turn (`rollout.max_calls_per_turn=4`) against one a
  turn (`=1`, in SFT and RL).
- **subagents** (ParaVT's sub-agents): the same task and start, `rollout.subagents=
  [crop_video]` (the policy reads each crop in a context of its own and returns text)
  against the crops' frames in the main row. `videorl eval` has no sub-agents: both RL
  models are evaluated with the frames in the main row.
- **turns** (FrameThinker's per-turn credit, `framethinker_quickstart`): the two-event task
  at the same 2 prompt frames; gold select_frames over the whole video (8 frames, at 0.125 s
  and 1-7 s: one inside each flash) after a `<think>` naming the range, which FrameThinker's
  reward needs to pay the selecting turn; `algorithm.turn_rewards=true` against one
  advantage per row.
- **retrieval** (TimeSearch-R, `timesearch_r_quickstart`): temporal grounding of a 1-1.5 s
  event at one prompt frame per 4 s; gold seek_video_frames with the question as the query
  against the prompt's frames only (SFT on direct answers, RL with `rollout.tools=[]`).
  The row also carries `bench/search_exit.py`'s retrieval hit rates on the same kind of
  videos.
- **multi_answer** (VideoAuto-R1, `videoauto_r1_quickstart`): the two-event task at the
  recipe's prompt video (8 frames, one a second: one inside each flash), SFT on
  `\\boxed{y}<think></think>\\boxed{y}` and `reward.mode=videoauto_r1` (0.9 R(a1) + 1.1 R(a2)
  + format) against the plain answer: SFT on `<answer>y</answer>` after videorl's prompt and
  the family's own reward (which scores a boxed answer 0, so each arm keeps its format).
- **early_exit**: the multi_answer arm's RL model evaluated with `--early-exit-confidence
  0.97` against without: accuracy and tokens per answer on each video.

Each model (the reading stage's too) is evaluated greedily (with its tools when it has
them, each tool's media under the video control too): the score on the real videos, on each
control, and the gains real - frozen and real - reversed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from harness import videorl

from videorl.data.families import Family
from videorl.data.loaders import write_records
from videorl.data.records import ChoiceAnswer, TaskRecord
from videorl.data.synth_scene import Placed, place
from videorl.data.synth_tasks import frame_size, large_size, save_video, shape

Command = Callable[..., float]  # `videorl *args`, returning its wall seconds
CONTROLS = ("frozen", "reversed", "shuffled")
EXIT_CONFIDENCE = 0.97  # VideoAuto-R1's inference threshold
TWO_EVENTS_DURATION = 8.0  # seconds; one flash of 1 s in each half
TWO_EVENTS = [  # one frame per 4 s: 2 prompt frames, which miss 1 s flashes
    "video.fps=0.25",
    "video.min_frames=2",
    "video.max_frames=2",
    "data.frame_budgets=[]",
    "rollout.max_new_tokens=160",  # a turn of two gold crop_video calls: 127 tokens
]
TOOL_SFT = ["sft.target=tool_trajectory", "sft.tool_call_fraction=1.0"]
DIRECT_SFT = ["sft.target=annotation", "rollout.tools=[]"]
SFT_SETTINGS = [  # sft_quickstart's batch, a higher rate (few steps); targets up to the budget
    "data.prompts_per_step=8",
    "optim.lr=5e-3",
    "optim.schedule=constant",
    "optim.warmup_steps=0",
    "sft.max_response_tokens=1024",
]
# The gold-trajectory SFT of the two-event arms whose answer needs a tool's frames (`reads_tools`:
# parallel, subagents, turns), for `--mech-tool-sft-steps` steps instead of `--mech-sft-steps`.
# The reading stage reads the prompt's video; crop_video and select_frames return their frames
# as images in a tool turn, which it does not read: teacher-forced on the gold trajectories it
# gives every training record the same letter, so these arms must learn to read the tools'
# frames in their SFT. 120 steps at 5e-3 fit the calls (loss 0.014) but not the answer letter,
# 1 of ~140 target tokens (its NLL 1.30 nats, chance 1.39; answers A or D only); 360 constant
# steps: 0.71 on the training records, 44% argmax on validation; 360 with a cosine decay to 0
# (this): 0.85, 54% (docs/tools.md "The mechanism arms").
TOOL_READ_SFT = ["optim.schedule=cosine"]
READ_RECIPE, READ_TASK = "sft_quickstart", "two_events"
READ = [  # the reading stage: direct answers from 8 prompt frames at 1 fps, one in each flash
    "data.families=[video_qa]",
    "data.prompt_style=videorl",
    "data.frame_budgets=[]",
    "video.fps=1.0",
    "video.min_frames=8",
    "video.max_frames=8",
    *DIRECT_SFT,
]
# data: which task (`TASKS`); shared: overrides of SFT and RL in both arms; arms: each arm's
# SFT and RL overrides and eval flags (`model_from`: evaluate that arm's RL model, no training)
MECHANISMS: dict[str, dict[str, Any]] = {
    "parallel": {
        "recipe": "paravt_quickstart",
        "data": "two_events",
        "shared": TWO_EVENTS,
        "sft": TOOL_SFT,
        "arms": {
            "parallel": {},
            "one_per_turn": {
                "sft": ["rollout.max_calls_per_turn=1"],
                "rl": ["rollout.max_calls_per_turn=1"],
            },
        },
    },
    "subagents": {
        "recipe": "paravt_quickstart",
        "data": "two_events",
        "shared": TWO_EVENTS,
        "sft": TOOL_SFT,
        "arms": {"subagents": {"rl": ["rollout.subagents=[crop_video]"]}, "main_row": {}},
    },
    "turns": {
        "recipe": "framethinker_quickstart",
        "data": "two_events",
        "shared": TWO_EVENTS,
        "sft": TOOL_SFT,
        "arms": {"turn_credit": {}, "row_credit": {"rl": ["algorithm.turn_rewards=false"]}},
    },
    "retrieval": {
        "recipe": "timesearch_r_quickstart",
        "data": "temporal_grounding",
        "shared": ["rollout.max_new_tokens=128"],  # the gold search: 89 tokens
        "sft": TOOL_SFT,
        "arms": {
            "seek": {},
            "prompt_frames": {
                "sft": DIRECT_SFT,
                "rl": ["rollout.tools=[]", "rollout.frame_search.verify=false"],
            },
        },
    },
    "multi_answer": {
        "recipe": "videoauto_r1_quickstart",
        "data": "two_events",
        "shared": [],
        "sft": ["sft.target=answer_twice"],
        "arms": {
            "answer_twice": {},
            "plain_answer": {  # its own prompt and target: boxed answers score 0 there
                "sft": ["sft.target=annotation", "data.prompt_style=videorl"],
                "rl": ["data.prompt_style=videorl", "reward.mode=videorl"],
            },
        },
    },
    "early_exit": {
        "recipe": "videoauto_r1_quickstart",
        "data": "two_events",
        "shared": [],
        "arms": {
            "full": {"model_from": ("multi_answer", "answer_twice")},
            "early_exit": {
                "model_from": ("multi_answer", "answer_twice"),
                "eval": ["--early-exit-confidence", EXIT_CONFIDENCE],
            },
        },
    },
}
TASKS = {  # the family and the eval metric of each task
    "two_events": ("video_qa", "accuracy"),
    "temporal_grounding": ("temporal_grounding", "mIoU"),
}
QUICK_RL = ["data.prompts_per_step=1", "rollout.n=2", "rollout.max_new_tokens=16"]


FIRST_COLOURS, SECOND_COLOURS = ("red", "blue"), ("green", "magenta")  # far apart in RGB
TWO_EVENTS_OPTIONS = len(FIRST_COLOURS) * len(SECOND_COLOURS)


def two_event_record(rng: np.random.Generator, rid: str, out: Path, index: int) -> TaskRecord:
    """One "which colours, in order?" video: shape 1 on screen over [a, a + 1) s, a in
    [0.5, 2.5], shape 2 over [b, b + 1), b in [4.5, 6.5] (half-second grid). The options are
    the same in every record, each first colour (`FIRST_COLOURS`) then each second one
    (`SECOND_COLOURS`), and option `index` (0-3) is the one shown: only the video tells the
    answers apart, the first half picks the row and the second half the column."""
    width, height = frame_size(rng)
    size = large_size(rng, width, height)
    colours = (FIRST_COLOURS[index // 2], SECOND_COLOURS[index % 2])
    starts = (float(rng.integers(1, 6)) / 2, 4.0 + float(rng.integers(1, 6)) / 2)
    items = []
    for colour in colours:
        x, y = place(rng, size, height, width, [])
        items.append(Placed(shape(rng), colour, x, y, size))

    def at(t: float) -> list[Placed]:
        return [item for item, s in zip(items, starts, strict=True) if s <= t < s + 1.0]

    media = save_video(out, rid, width, height, TWO_EVENTS_DURATION, at)
    return TaskRecord(
        id=rid,
        family=Family("video_qa"),
        problem=(
            "Two shapes flash on screen, one in each half of the video. "
            "What are their colours, in order?"
        ),
        answer=ChoiceAnswer("ABCD"[index]),
        source="bench-two-events",
        video=media,
        duration=TWO_EVENTS_DURATION,
        options=tuple(f"{a}, then {b}" for a in FIRST_COLOURS for b in SECOND_COLOURS),
        subtype="colour_order",
        width=width,
        height=height,
        extra={"flashes": [[s, s + 1.0] for s in starts], "colours": list(colours)},
    )


def balanced(rng: np.random.Generator, count: int, options: int) -> list[int]:
    """`count` answer indices, each of the `options` as often as `count` allows (the first
    `count % options` once more), in random order."""
    return [int(i) for i in rng.permutation(np.arange(count) % options)]


def write_two_events(out: Path, n: int, val: int, seed: int) -> dict[str, str]:
    """`n` training and `val` validation two-event records under `out` (made once); each
    split's answers balanced over the four options."""
    train, valid = out / "train.jsonl", out / "val.jsonl"
    if not valid.is_file():
        rng = np.random.default_rng(seed)
        for path, prefix, count in ((train, "two", n), (valid, "two-val", val)):
            answers = balanced(rng, count, TWO_EVENTS_OPTIONS)
            records = [
                two_event_record(rng, f"{prefix}-{k:04d}", out, answer)
                for k, answer in enumerate(answers)
            ]
            write_records(path, records)
    return {"train": str(train), "val": str(valid)}


def blind_best(val: str) -> float:
    """The majority answer's share of the validation records, in percent: what a model that
    ignores the video (and the options' text) scores at best."""
    from collections import Counter

    from videorl.data.loaders import load_records

    answers = Counter(json.dumps(r.answer.to_dict()) for r in load_records(val).records)
    return 100 * max(answers.values()) / max(sum(answers.values()), 1)


def write_synth(
    out: Path, family: str, n: int, val: int, seed: int, command: Command
) -> dict[str, str]:
    """`videorl synth` of one family (temporal grounding: the "appear" events) under `out`."""
    if not (out / "val.jsonl").is_file():
        events = ["--tg-events", "appear"] if family == "temporal_grounding" else []
        command(
            "synth", "--out", out, "--families", family, *events, "--n", n, "--val", val,
            "--seed", seed,
        )  # fmt: skip
    return {"train": str(out / "train.jsonl"), "val": str(out / "val.jsonl")}


def write_tasks(work: Path, n: int, val: int, seed: int, command: Command) -> dict[str, dict]:
    """Each task's training and validation files (in a folder named by the sizes and the
    seed: other sizes are not reused); a choice task's also its blind best."""
    sizes = f"{n}-{val}-seed{seed}"
    two_events = write_two_events(work / f"two_events_colours-{sizes}", n, val, seed)
    return {
        "two_events": {**two_events, "blind_best": blind_best(two_events["val"])},
        "temporal_grounding": write_synth(
            work / f"temporal_grounding-{sizes}", "temporal_grounding", n, val, seed, command
        ),
    }


@dataclass(frozen=True)
class Plan:
    """What every arm of one run shares."""

    work: Path  # where each run's folder goes
    steps: int  # RL steps of each arm
    sft_steps: int  # SFT steps of each arm on its gold targets
    seed: int
    window: int  # RL steps averaged at each end of the reward curve
    starts: dict[str, str]  # each task's SFT start model (`task_starts`)
    rl_set: tuple[str, ...] = ()  # overrides of every arm's RL (`--mech-rl-set`)
    quick: bool = False  # a smoke run: tiny RL batches, 16-token turns
    command: Command = videorl  # how each `videorl` command runs
    tool_sft_steps: int | None = None  # the `reads_tools` arms' SFT steps; None: sft_steps


def task_starts(seeing: str, read: str | None) -> dict[str, str]:
    """The model each task's arms start their SFT from: `READ_TASK`'s from the reading
    stage's model when it ran (`read`), every other task's (retrieval's temporal grounding,
    which the seeing model already reads) from the seeing model."""
    return {task: read if task == READ_TASK and read else seeing for task in TASKS}


def run_once(command: Command, out: Path, *args: object) -> float:
    """`command(*args)` with outputs in `out`, unless an earlier run finished there (its
    `seconds.txt`, as `harness.run_once`); its wall seconds."""
    timing = out / "seconds.txt"
    if not timing.is_file():
        seconds = command(*args)
        timing.write_text(f"{seconds:.1f}\n")
    return float(timing.read_text())


def _key(*inputs: object) -> str:
    """A short hash of what a run depends on: its folder's name, so other inputs rerun."""
    return hashlib.sha1(json.dumps(inputs, default=str).encode()).hexdigest()[:8]


def _common(model: str, data: dict[str, Any], out: Path, steps: int, seed: int) -> list[str]:
    return [
        f"model.path={model}", f"data.train={data['train']}", "data.val=null",
        f"trainer.output_dir={out}", f"trainer.steps={steps}", f"trainer.save_every={steps}",
        "trainer.val_every=0", "trainer.tensorboard=false", f"trainer.seed={seed}",
        f"data.seed={seed}", "--overwrite",
    ]  # fmt: skip


def sft_run(
    recipe: str, overrides: list[str], start: str, data: dict, out: Path, steps: int, seed: int,
    command: Command,
) -> dict[str, Any]:  # fmt: skip
    """`videorl sft <recipe>` from `start` with `overrides` into `out` (reused when done)."""
    from videorl.trainer.metrics import read_metrics

    args = _common(start, data, out, steps, seed)
    seconds = run_once(command, out, "sft", recipe, *overrides, *args)
    rows = read_metrics(out / "metrics.jsonl")
    return {
        "model": str(out / "final"),
        "start": start,
        "steps": steps,
        "seconds": seconds,
        "cpu_seconds": sum(r["time/step_cpu"] for r in rows),
        "loss_first": rows[0]["sft/loss"],
        "loss_last": rows[-1]["sft/loss"],
    }


def read_stage(
    start: str, data: dict[str, Any], work: Path, steps: int, seed: int, command: Command
) -> dict[str, Any]:
    """The reading stage: `videorl sft sft_quickstart` from the seeing model on the two-event
    task's direct answers (`READ`, `SFT_SETTINGS`), and its greedy eval without tools on the
    real videos and the controls; each reused when `work/` has it."""
    overrides = [*READ, *SFT_SETTINGS]
    key = _key(READ_RECIPE, start, data["train"], overrides)
    out = work / f"read-{READ_RECIPE}-{steps}-seed{seed}-{key}"
    read = sft_run(READ_RECIPE, overrides, start, data, out, steps, seed, command)
    config = load_recipe(READ_RECIPE, READ)
    flags: list[object] = ["--max-new-tokens", config.rollout.max_new_tokens]
    folder = work / f"eval-read-{READ_TASK}-{_key(read['model'], data['val'], flags)}"
    read["eval"] = evaluate(read["model"], data["val"], folder, flags, READ_TASK, False, command)
    return read


def reads_tools(mechanism: str) -> bool:
    """Whether the mechanism's arms answer the two-event task from its tools' frames: SFT on
    gold tool trajectories of `READ_TASK` (parallel, subagents, turns)."""
    spec = MECHANISMS[mechanism]
    return spec["data"] == READ_TASK and spec.get("sft") == TOOL_SFT


def sft_settings(mechanism: str, plan: Plan) -> tuple[list[str], int]:
    """The SFT settings and steps of the mechanism's arms (the same for every arm of it):
    `SFT_SETTINGS` and `plan.sft_steps`; a `reads_tools` mechanism's also `TOOL_READ_SFT`
    and `plan.tool_sft_steps` (when set)."""
    if reads_tools(mechanism) and plan.tool_sft_steps is not None:
        return [*SFT_SETTINGS, *TOOL_READ_SFT], plan.tool_sft_steps
    return SFT_SETTINGS, plan.sft_steps


def sft_arm(mechanism: str, arm: str, data: dict, plan: Plan) -> dict[str, Any]:
    """`videorl sft <recipe>` from the task's start model on the mechanism's gold targets
    with the arm's SFT overrides, then `sft_settings`; one run per distinct overrides (its
    folder named by their hash)."""
    spec = MECHANISMS[mechanism]
    settings, steps = sft_settings(mechanism, plan)
    overrides = [*spec["shared"], *spec["sft"], *spec["arms"][arm].get("sft", []), *settings]
    start = plan.starts[spec["data"]]
    key = _key(spec["recipe"], start, data["train"], overrides)
    out = plan.work / f"sft-{spec['recipe']}-{steps}-seed{plan.seed}-{key}"
    return sft_run(spec["recipe"], overrides, start, data, out, steps, plan.seed, plan.command)


def train_arm(
    mechanism: str, arm: str, model: str, data: dict[str, Any], plan: Plan
) -> dict[str, Any]:
    """`videorl train <recipe>` from `model` with the arm's overrides, then `plan.rl_set`
    (reused when `work/` has a run of the same recipe, model, data and overrides)."""
    spec = MECHANISMS[mechanism]
    extra = [*(QUICK_RL if plan.quick else []), *plan.rl_set]
    overrides = [*spec["shared"], *spec["arms"][arm].get("rl", []), *extra]
    key = _key(spec["recipe"], model, data["train"], overrides)
    name = f"rl-{mechanism}-{spec['data']}-{arm}-{plan.steps}-seed{plan.seed}-{key}"
    out = plan.work / name
    args = _common(model, data, out, plan.steps, plan.seed)
    seconds = run_once(plan.command, out, "train", spec["recipe"], *overrides, *args)
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


def load_recipe(recipe: str, overrides: list[str]) -> Any:
    """The resolved config of `recipe` with `overrides`."""
    from videorl.api import resolve_config_path
    from videorl.config import load_config

    return load_config(resolve_config_path(recipe), overrides)


def arm_config(mechanism: str, arm: str, rl_set: tuple[str, ...] = ()) -> Any:
    """The resolved RL config of the arm (its recipe with the shared and the arm's
    overrides, then `rl_set`)."""
    spec = MECHANISMS[mechanism]
    return load_recipe(spec["recipe"], [*spec["shared"], *spec["arms"][arm].get("rl", []), *rl_set])


def check_rl_set(rl_set: tuple[str, ...]) -> None:
    """Load every trained arm's RL config with `rl_set`: a bad override fails here, before
    any run."""
    for mechanism, spec in MECHANISMS.items():
        for arm, arm_spec in spec["arms"].items():
            if "model_from" not in arm_spec:
                arm_config(mechanism, arm, rl_set)


def eval_flags(mechanism: str, arm: str, quick: bool) -> list[object]:
    """`videorl eval`'s flags for the arm's RL model: its turn budget (16 tokens in `quick`)
    and, when it has tools, its tools and their modules; then the arm's own flags."""
    rollout = arm_config(mechanism, arm).rollout
    flags: list[object] = ["--max-new-tokens", 16 if quick else rollout.max_new_tokens]
    if rollout.tools:
        flags += ["--tools", ",".join(rollout.tools), "--tool-modules"]
        flags += [",".join(rollout.tool_modules), "--max-turns", rollout.max_turns]
        flags += ["--max-total-tokens", rollout.max_total_tokens]
    return [*flags, *MECHANISMS[mechanism]["arms"][arm].get("eval", [])]


def tokens_per_answer(model: str, predictions: Path) -> float:
    """Mean tokens (the model's tokenizer) of the responses in a predictions file."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model)
    lines = [json.loads(line) for line in predictions.read_text().splitlines() if line.strip()]
    counts = [len(tokenizer.encode(row.get("response") or "")) for row in lines]
    return sum(counts) / max(len(counts), 1)


def evaluate_arm(mechanism: str, arm: str, model: str, val: str, plan: Plan) -> dict[str, Any]:
    """`evaluate` of the arm's model with its flags (`eval_flags`), in a folder named by the
    model and the flags."""
    task = MECHANISMS[mechanism]["data"]
    flags = eval_flags(mechanism, arm, plan.quick)
    folder = plan.work / f"eval-{mechanism}-{task}-{arm}-{_key(model, val, flags)}"
    tools = bool(arm_config(mechanism, arm).rollout.tools)
    return evaluate(model, val, folder, flags, task, tools, plan.command)


def evaluate(
    model: str, val: str, out: Path, flags: list[object], task: str, tools: bool,
    command: Command,
) -> dict[str, Any]:  # fmt: skip
    """Greedy score (reused when `out` has it) on the real videos and each control (with the
    tools of `flags` when it has them, their media under the control too; else the prompt
    alone), the gains over frozen and reversed, the score without tools, calls per answer,
    and (without tools) tokens per answer on each video."""
    family, metric = TASKS[task]
    if not (out / "metrics.json").is_file():  # eval writes it last, when all is scored
        command(
            "eval", "--model", model, "--benchmark", val, "--out", out, *flags,
            "--controls", ",".join(CONTROLS), "--overwrite",
        )  # fmt: skip
    metrics = json.loads((out / "metrics.json").read_text())
    if tools:
        real = metrics["tools"]["with_tools"][family][metric]
        without = metrics["tools"]["without_tools"][family][metric]
    else:
        real, without = metrics["families"][family]["metrics"][metric], None
    use = metrics.get("tools", {}).get("use", {})
    scores: dict[str, Any] = {
        "metric": metric,
        "real": real,
        "without_tools": without,
        "calls_per_answer": use.get("calls_per_answer", 0.0),
        "errors_per_answer": use.get("errors_per_answer", 0.0),
        "tokens_per_answer": None,
    }
    for control in CONTROLS:
        scores[control] = metrics["controls"][control]["families"][family][metric]
    scores["gain_vs_frozen"] = real - scores["frozen"]
    scores["gain_vs_reversed"] = real - scores["reversed"]
    if not tools:  # the responses are whole answers: their length is the cost
        files = {"real": out / "predictions.jsonl"}
        files |= {c: out / "controls" / c / "predictions.jsonl" for c in CONTROLS}
        scores["tokens_per_answer"] = {v: tokens_per_answer(model, f) for v, f in files.items()}
    if "early_exit" in metrics:
        scores["exit_rate"] = metrics["early_exit"]["exit_rate"]
    return scores


def run_mechanism(
    mechanism: str, data: dict[str, Any], plan: Plan, earlier: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """One mechanism's rows: each arm's SFT, RL and eval (each reused when `work/` has it;
    a `model_from` arm evaluates the RL model of that arm's row in `earlier`). `quick`: one
    prompt of two rows a step, 16-token turns, a smoke run whose numbers mean nothing."""
    rows = []
    for arm, arm_spec in MECHANISMS[mechanism]["arms"].items():
        row: dict[str, Any] = {"mechanism": mechanism, "arm": arm}
        if "model_from" in arm_spec:
            source = [r for r in earlier if (r["mechanism"], r["arm"]) == arm_spec["model_from"]]
            model = source[0]["rl"]["model"]
        else:
            sft = sft_arm(mechanism, arm, data, plan)
            run = train_arm(mechanism, arm, sft["model"], data, plan)
            model = run["model"]
            row |= summarize_run(sft, run, plan.window)
        row["eval"] = evaluate_arm(mechanism, arm, model, data["val"], plan)
        rows.append(row)
    return rows


def summarize_run(sft: dict[str, Any], run: dict[str, Any], window: int) -> dict[str, Any]:
    """An arm's training: reward over the first and last `window` RL steps, calls per row
    over the last, SFT and RL CPU minutes."""
    return {
        "reward_first": _mean(run["reward"][:window]),
        "reward_last": _mean(run["reward"][-window:]),
        "calls_last": _mean(run["calls_per_row"][-window:]),
        "cpu_minutes": (sft["cpu_seconds"] + run["cpu_seconds"]) / 60,
        "sft": sft,
        "rl": run,
    }


def _mean(values: list[float | None]) -> float:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else float("nan")


def _cell(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| mechanism | arm | reward, first | last | calls/row, last | eval metric | real | "
        "without tools | " + " | ".join(CONTROLS) + " | gain vs frozen | gain vs reversed | "
        "tokens/answer, real | train CPU min |",
        "|---|---|---|---|---|---|---|---|" + "---|" * len(CONTROLS) + "---|---|---|---|",
    ]
    for row in rows:
        e = row["eval"]
        controls = " | ".join(f"{e[c]:.1f}" for c in CONTROLS)
        tokens = (e["tokens_per_answer"] or {}).get("real")
        lines.append(
            f"| {row['mechanism']} | {row['arm']} | {_cell(row.get('reward_first'), '.3f')} |"
            f" {_cell(row.get('reward_last'), '.3f')} | {_cell(row.get('calls_last'), '.2f')} |"
            f" {e['metric']} | {e['real']:.1f} | {_cell(e['without_tools'], '.1f')} |"
            f" {controls} | {e['gain_vs_frozen']:+.1f} | {e['gain_vs_reversed']:+.1f} |"
            f" {_cell(tokens, '.1f')} | {_cell(row.get('cpu_minutes'), '.1f')} |"
        )
    return "\n".join(lines)


def tokens_markdown(rows: list[dict[str, Any]]) -> str:
    """The arms that answer without tools: tokens per answer on each video, and the share
    of answers that stopped after a1 (early exit, real videos)."""
    lines = [
        "| mechanism | arm | tokens/answer, real | " + " | ".join(CONTROLS) + " | exit rate |",
        "|---|---|---|" + "---|" * len(CONTROLS) + "---|",
    ]
    for row in rows:
        e = row["eval"]
        if e["tokens_per_answer"] is None:
            continue
        tokens = " | ".join(f"{e['tokens_per_answer'][v]:.1f}" for v in ("real", *CONTROLS))
        lines.append(
            f"| {row['mechanism']} | {row['arm']} | {tokens} | {_cell(e.get('exit_rate'), '.2f')} |"
        )
    return "\n".join(lines)


def search_line(search: dict[str, Any]) -> str:
    """`bench/search_exit.py`'s retrieval hit rates, as one sentence."""
    rates = ", ".join(f"{arm} {rate:.2f}" for arm, rate in search["hit_rate"].items())
    return (
        f"seek_video_frames hit rates (a returned frame inside the event, "
        f"`search_exit.retrieval` over {search['videos']} videos): {rates}."
    )


def blind_line(blind: dict[str, float]) -> str:
    """Each choice task's blind best, as one sentence."""
    scores = ", ".join(f"{task} {score:.1f}" for task, score in blind.items())
    return (
        "Blind best (the validation set's majority answer: the most a model that ignores "
        f"the video scores): {scores}."
    )


def read_row(read: dict[str, Any]) -> dict[str, Any]:
    """The reading stage as a row of the tables: its model's eval, its SFT's CPU minutes."""
    arm = f"direct answers, {read['steps']} SFT steps"
    minutes = read["cpu_seconds"] / 60
    return {"mechanism": "read", "arm": arm, "eval": read["eval"], "cpu_minutes": minutes}


def read_line(read: dict[str, Any]) -> str:
    """The reading stage's training and score, as one sentence."""
    e = read["eval"]
    return (
        f"Reading stage (the start of every two-event arm): {read['steps']} SFT steps on "
        "direct answers from 8 prompt frames at 1 fps, from the seeing model; loss "
        f"{read['loss_first']:.3f} to {read['loss_last']:.3f}, {read['cpu_seconds'] / 60:.1f} "
        f"CPU min ({read['seconds']:.0f} s wall); greedy accuracy {e['real']:.1f} (frozen "
        f"{e['frozen']:.1f}, reversed {e['reversed']:.1f})."
    )


def tables(saved: dict[str, Any]) -> str:
    """The mechanism rows as docs/tools.md shows them (the reading stage's first, when the
    run had one): scores, tokens, the reading stage, the choice tasks' blind best,
    retrieval hits."""
    rows, search, read = saved["rows"], saved.get("search"), saved.get("read")
    shown = [read_row(read), *rows] if read else rows  # search: none until a run completes
    text = f"{markdown(shown)}\n\n{tokens_markdown(shown)}"
    if read:
        text += f"\n\n{read_line(read)}"
    if saved.get("blind_best"):  # runs before the two-event colour task have none
        text += f"\n\n{blind_line(saved['blind_best'])}"
    if not saved.get("complete", True):
        missing = [name for name in MECHANISMS if name not in {row["mechanism"] for row in rows}]
        text += f"\n\nNot in this run (cut short): {', '.join(missing)}."
    return text + (f"\n\n{search_line(search)}" if search else "")
