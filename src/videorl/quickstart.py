"""The README's quickstart and docs/tools.md's tools quickstart as data: each `videorl`
command in order and the folder it writes.

`videorl quickstart` (and `make quickstart`, which calls it) runs `STEPS`; `videorl quickstart
--tools` (and `make tools-quickstart`) runs `TOOLS_STEPS`. An error about a missing file names
the step that makes it (`made_by`), so a newcomer who runs `videorl train quickstart` in a
fresh folder is told to run `videorl sft sft_quickstart` first, and one who runs `videorl
train tools_quickstart` the SFT stage that writes its model, not only that a path is missing.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, replace
from pathlib import Path

QUICKSTART_DIR = "runs/quickstart"  # the recipes quickstart.yaml and sft_quickstart.yaml use it
TOOLS_DIR = "runs/tools_quickstart"  # the recipe tools_quickstart.yaml uses it


@dataclass(frozen=True)
class Step:
    """One command of the pipeline (`argv` after `videorl`) and the folder it writes
    (None: it only prints)."""

    argv: tuple[str, ...]
    makes: str | None
    overwrite: bool = True  # pass --overwrite when the pipeline is rerun

    @property
    def command(self) -> str:
        """The command as a user types it: `videorl sft sft_quickstart`."""
        return shlex.join(("videorl", *self.argv))


_QS = QUICKSTART_DIR
# the quickstart's videos; its event bounds lie on Qwen's 1 s temporal patches (`--tg-grid 1`,
# lab note 17), the tools quickstart's on the 0.5 s grid it was measured on (docs/tools.md)
_QS_DATA = (
    *("--families", "temporal_grounding", "--tg-events", "appear"),
    *("--n", "256", "--seed", "0", "--val", "32"),
)
_EVAL = ("--benchmark", f"{_QS}/data/val.jsonl", "--controls", "frozen,reversed")
STEPS: tuple[Step, ...] = (
    Step(
        ("make-tiny", f"{_QS}/model", "--arch", "qwen3_vl", "--vision-warmup", "150"),
        f"{_QS}/model",
    ),
    Step(("synth", "--out", f"{_QS}/data", *_QS_DATA, "--tg-grid", "1"), f"{_QS}/data"),
    Step(("sft", "sft_quickstart"), f"{_QS}/sft"),
    Step(("train", "quickstart"), f"{_QS}/train"),
    Step(
        ("eval", "--model", f"{_QS}/sft/final", *_EVAL, "--out", f"{_QS}/eval-sft"),
        f"{_QS}/eval-sft",
    ),
    Step(("eval", "--model", f"{_QS}/train/final", *_EVAL, "--out", f"{_QS}/eval"), f"{_QS}/eval"),
    Step(("eval", "--compare", f"{_QS}/eval-sft", f"{_QS}/eval"), None, overwrite=False),
)


_TQ = TOOLS_DIR
# The seeing and reading stages decay as sft_quickstart does (cosine after an 80-step warm-up;
# at a constant rate the tools quickstart gave mIoU 42 on one machine and 11 on another:
# docs/tools.md); the 60-step mix is too short for that warm-up and keeps a constant rate.
_SHORT_STAGE = ("optim.schedule=constant", "optim.warmup_steps=5")
# The SFT stages on gold get_clip trajectories (docs/tools.md, "The bench"): the recipe
# sft_quickstart on the tools quickstart's data, the prompt video at 0.25 fps.
_TOOL_SFT = (
    f"data.train={_TQ}/data/train.jsonl",
    "data.val=null",
    "video.fps=0.25",
    "video.min_frames=2",
    "video.max_frames=4",
    "video.tool_max_frames=32",
    "sft.target=tool_trajectory",
    "rollout.tools=[get_clip]",
    "sft.max_response_tokens=1024",
    "trainer.val_every=0",
)
TOOLS_STEPS: tuple[Step, ...] = (
    Step(
        ("make-tiny", f"{_TQ}/model", "--arch", "qwen3_vl", "--vision-warmup", "150"),
        f"{_TQ}/model",
    ),
    Step(("synth", "--out", f"{_TQ}/data", *_QS_DATA), f"{_TQ}/data"),
    Step(
        (
            "sft",
            "sft_quickstart",
            f"model.path={_TQ}/model",
            f"data.train={_TQ}/data/train.jsonl",
            "data.val=null",
            "trainer.steps=800",  # as measured (docs/tools.md); sft_quickstart now runs 1600
            "trainer.save_every=400",
            f"trainer.output_dir={_TQ}/seeing",
        ),
        f"{_TQ}/seeing",
    ),
    Step(
        (
            "sft",
            "sft_quickstart",
            f"model.path={_TQ}/seeing/final",
            *_TOOL_SFT,
            "trainer.steps=400",
            "trainer.save_every=400",
            f"trainer.output_dir={_TQ}/sft-read",
        ),
        f"{_TQ}/sft-read",
    ),
    Step(
        (
            "sft",
            "sft_quickstart",
            f"model.path={_TQ}/sft-read/final",
            *_TOOL_SFT,
            "sft.tool_call_fraction=0.75",
            *_SHORT_STAGE,
            "optim.lr=1e-3",
            "trainer.steps=60",
            "trainer.save_every=60",
            f"trainer.output_dir={_TQ}/sft-mix",
        ),
        f"{_TQ}/sft-mix",
    ),
    Step(("train", "tools_quickstart"), f"{_TQ}/train"),
    Step(
        (
            "eval",
            "--model",
            f"{_TQ}/train/final",
            "--benchmark",
            f"{_TQ}/data/val.jsonl",
            "--out",
            f"{_TQ}/eval",
            "--tools",
            "get_clip",
            "--max-turns",
            "3",
            "--max-new-tokens",
            "96",
            "--max-total-tokens",
            "1024",
            "--controls",
            "frozen,reversed",
        ),
        f"{_TQ}/eval",
    ),
)
# pipeline steps -> the command that runs them all
PIPELINES: tuple[tuple[tuple[Step, ...], str], ...] = (
    (STEPS, "videorl quickstart"),
    (TOOLS_STEPS, "videorl quickstart --tools"),
)


def seeded(steps: tuple[Step, ...], seed: int) -> tuple[Step, ...]:
    """`steps` with `seed` wherever a command draws: the tiny model's init and tower warm-up,
    the synthetic videos, each run's data order and sampling. Seed 0 is the steps as listed."""
    if seed == 0:
        return steps
    return tuple(replace(step, argv=_with_seed(step.argv, seed)) for step in steps)


def _with_seed(argv: tuple[str, ...], seed: int) -> tuple[str, ...]:
    command = argv[0]
    if command == "synth":
        at = argv.index("--seed") + 1
        return (*argv[:at], str(seed), *argv[at + 1 :])
    if command == "make-tiny":
        return (*argv, "--seed", str(seed))
    if command in ("sft", "train"):
        return (*argv, f"trainer.seed={seed}", f"data.seed={seed}")
    return argv  # eval: greedy, nothing drawn


def _relative(path: str | os.PathLike[str]) -> Path:
    """`path` relative to the working folder when it lies under it (the steps' paths are)."""
    given = Path(os.path.normpath(path))
    if given.is_absolute():
        try:
            return given.relative_to(Path.cwd())
        except ValueError:
            return given
    return given


def _making(path: str | os.PathLike[str]) -> tuple[Step, str] | None:
    """The step that writes `path` and the command of its pipeline."""
    wanted = _relative(path)
    for steps, command in PIPELINES:
        for step in steps:
            if step.makes is not None and wanted.is_relative_to(step.makes):
                return step, command
    return None


def made_by(path: str | os.PathLike[str]) -> Step | None:
    """The quickstart (or tools quickstart) step that writes `path` (a file or folder inside
    what it makes), or None when no step does."""
    found = _making(path)
    return None if found is None else found[0]


def next_command(path: str | os.PathLike[str]) -> str:
    """`"; run `videorl sft sft_quickstart` first (it writes runs/quickstart/sft)"` for a
    missing path that a quickstart step makes, else `""`: the tail of a one-line error."""
    found = _making(path)
    if found is None:
        return ""
    step, pipeline = found
    return f"; run `{step.command}` first (it writes {step.makes}; `{pipeline}` runs every step)"
