"""A training run's output folder: one run per folder, each step logged once.

`claim_run_dir` is called before anything is loaded or written (by `videorl train`, and
reusable by any other training command):
- a folder that holds another run (or any other files) is refused with one line, unless
  the run is being resumed from one of its own checkpoints (`--resume auto|PATH`) or the
  user passed `--overwrite`, which removes that run's files (and only those);
- temporary folders and files left by killed processes are removed;
- on resume at step k, `metrics.jsonl` and `samples.jsonl` are cut back to steps <= k
  (one rename each), so the re-run steps k+1.. appear once.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path

import torch

from videorl.config import Config
from videorl.config.run import RUN_CONFIG
from videorl.distributed import DistInfo, barrier
from videorl.errors import ConfigError
from videorl.outputs import is_empty, remove_stale_temporaries, rewrite_atomically

STEP_LOGS = ("metrics.jsonl", "samples.jsonl")  # one JSON object per step, `step` key
RUN_ENTRIES = (RUN_CONFIG, *STEP_LOGS, "reward_curves.png", "tensorboard", "best", "final")


def holds_run(folder: Path) -> bool:
    """A training run's logs, checkpoints or model folders are there (a config alone is not)."""
    return any(p.name != RUN_CONFIG for p in run_entries(folder))


def run_entries(folder: Path) -> list[Path]:
    """The files and folders a training run writes that exist in `folder`."""
    found = [folder / name for name in RUN_ENTRIES if (folder / name).exists()]
    steps = [p for p in folder.glob("step-*") if p.is_dir()] if folder.is_dir() else []
    return found + sorted(steps)


def _refusal(folder: Path, is_run: bool) -> ConfigError:
    what = "holds another training run" if is_run else "holds files that are not a run"
    return ConfigError(
        f"trainer.output_dir {str(folder)!r} {what}; "
        + ("pass --resume auto to continue it, " if is_run else "")
        + "--overwrite to replace it, or set a new trainer.output_dir"
    )


def run_inputs(cfg: Config) -> list[tuple[str, str | None]]:
    """(config key, path) of every model and data file a training run reads."""
    model, data = cfg.model, cfg.data
    return [
        ("model.path", model.path),
        ("model.reference_path", model.reference_path),
        ("model.teacher_path", model.teacher_path),
        ("data.train", data.train),
        ("data.val", data.val),
    ]


def _inside(child: Path, parent: Path) -> bool:
    child, parent = child.resolve(), parent.resolve()
    return child == parent or parent in child.parents


def check_inputs(folder: Path, inputs: Sequence[tuple[str, str | None]], overwrite: bool) -> None:
    """The run may not write into a model or data input, and `--overwrite` may not delete one
    (a model at `OUT/final` trained again into `OUT`)."""
    doomed = run_entries(folder) if overwrite and holds_run(folder) else []
    for key, value in inputs:
        if not value or not Path(value).exists():
            continue  # not a local path (e.g. a Hub id)
        if _inside(folder, Path(value)) or any(_inside(Path(value), d) for d in doomed):
            raise ConfigError(
                f"trainer.output_dir {str(folder)!r} overlaps {key}={value!r}"
                + (", which --overwrite would delete" if doomed else "")
                + "; set a trainer.output_dir outside the run's inputs"
            )


def check_run_dir(folder: Path, checkpoint: Path | None, *, resume: bool, overwrite: bool) -> None:
    """Raise unless training may write into `folder` (read-only; every rank may call it)."""
    if overwrite or is_empty(folder):
        return
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"trainer.output_dir {str(folder)!r} is a file; choose a folder path")
    has_run = holds_run(folder)
    if resume and has_run and (checkpoint is None or _own(folder, checkpoint)):
        return  # continuing this folder's run (from its latest or a named checkpoint)
    visible = [p for p in folder.iterdir() if not p.name.startswith(".")]
    if not has_run and not visible:
        return  # only stale temporaries, removed below
    raise _refusal(folder, has_run)


def _own(folder: Path, checkpoint: Path | None) -> bool:
    return checkpoint is not None and checkpoint.resolve().parent == folder.resolve()


def truncate_step_logs(folder: Path, step: int) -> None:
    """Keep the rows of steps <= `step` in each per-step log (atomic rewrite)."""
    for name in STEP_LOGS:
        path = folder / name
        if not path.is_file():
            continue
        kept = []
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                keep = int(json.loads(line)["step"]) <= step
            except (ValueError, KeyError, TypeError):
                keep = False  # a line cut by a kill mid-write
            if keep:
                kept.append(line + "\n")
        rewrite_atomically(path, "".join(kept))


def _checkpoint_step(checkpoint: Path | None) -> int:
    if checkpoint is None:
        return 0
    return int(torch.load(checkpoint / "state.pt", map_location="cpu", weights_only=False)["step"])


def refuse_past_end(checkpoint: Path | None, resumed: int, steps: int) -> None:
    """A checkpoint at step `resumed`, past `steps` (the run's length), is refused:
    resuming it would train backwards."""
    if resumed > steps:
        raise ConfigError(
            f"checkpoint {str(checkpoint)!r} is at step {resumed}, past trainer.steps={steps}; "
            "raise trainer.steps to continue it, or set a new trainer.output_dir"
        )


def claim_run_dir(
    output_dir: str | Path,
    checkpoint: Path | None,
    *,
    resume: bool,
    overwrite: bool,
    info: DistInfo | None = None,
    steps: int | None = None,
    inputs: Sequence[tuple[str, str | None]] = (),
) -> None:
    """Check the folder (every rank), then on the main rank: remove the replaced run's files
    (`overwrite`), stale temporaries, and log rows past the resumed step. A checkpoint past
    `steps` (the run's length) is refused: resuming it would train backwards. `inputs`
    are (config key, path) pairs of the run's models and data files."""
    info = info or DistInfo()
    folder = Path(output_dir)
    check_inputs(folder, inputs, overwrite and not _own(folder, checkpoint))
    check_run_dir(folder, checkpoint, resume=resume, overwrite=overwrite)
    resumed = _checkpoint_step(checkpoint)
    if steps is not None:
        refuse_past_end(checkpoint, resumed, steps)
    barrier()  # every rank has checked before the main rank changes anything
    if info.is_main and folder.is_dir():
        if overwrite and not _own(folder, checkpoint) and holds_run(folder):
            for entry in run_entries(folder):
                shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
        remove_stale_temporaries(folder)
        truncate_step_logs(folder, resumed)
    barrier()
