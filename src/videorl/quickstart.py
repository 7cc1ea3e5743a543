"""The README's quickstart as data: each `videorl` command in order and the folder it writes.

`videorl quickstart` (and `make quickstart`, which calls it) runs these steps; an error about a
missing file names the step that makes it (`made_by`), so a newcomer who runs `videorl train
quickstart` in a fresh folder is told to run `videorl sft sft_quickstart` first, not only
that a path is missing.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path

QUICKSTART_DIR = "runs/quickstart"  # the recipes quickstart.yaml and sft_quickstart.yaml use it


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
_EVAL = ("--benchmark", f"{_QS}/data/val.jsonl", "--controls", "frozen,reversed")
STEPS: tuple[Step, ...] = (
    Step(
        ("make-tiny", f"{_QS}/model", "--arch", "qwen3_vl", "--vision-warmup", "150"),
        f"{_QS}/model",
    ),
    Step(
        (
            "synth",
            "--out",
            f"{_QS}/data",
            "--families",
            "temporal_grounding",
            "--tg-events",
            "appear",
            "--n",
            "256",
            "--seed",
            "0",
            "--val",
            "32",
        ),
        f"{_QS}/data",
    ),
    Step(("sft", "sft_quickstart"), f"{_QS}/sft"),
    Step(("train", "quickstart"), f"{_QS}/train"),
    Step(
        ("eval", "--model", f"{_QS}/sft/final", *_EVAL, "--out", f"{_QS}/eval-sft"),
        f"{_QS}/eval-sft",
    ),
    Step(("eval", "--model", f"{_QS}/train/final", *_EVAL, "--out", f"{_QS}/eval"), f"{_QS}/eval"),
    Step(("eval", "--compare", f"{_QS}/eval-sft", f"{_QS}/eval"), None, overwrite=False),
)


def _relative(path: str | os.PathLike[str]) -> Path:
    """`path` relative to the working folder when it lies under it (the steps' paths are)."""
    given = Path(os.path.normpath(path))
    if given.is_absolute():
        try:
            return given.relative_to(Path.cwd())
        except ValueError:
            return given
    return given


def made_by(path: str | os.PathLike[str]) -> Step | None:
    """The quickstart step that writes `path` (a file or folder inside what it makes), or
    None when no step does."""
    wanted = _relative(path)
    for step in STEPS:
        if step.makes is not None and wanted.is_relative_to(step.makes):
            return step
    return None


def next_command(path: str | os.PathLike[str]) -> str:
    """`"; run `videorl sft sft_quickstart` first (it writes runs/quickstart/sft)"` for a
    missing path that a quickstart step makes, else `""`: the tail of a one-line error."""
    step = made_by(path)
    if step is None:
        return ""
    return (
        f"; run `{step.command}` first (it writes {step.makes}; `videorl quickstart` runs "
        "every step)"
    )
