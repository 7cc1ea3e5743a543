"""`videorl train`, `videorl sft`, `videorl quickstart` and `videorl merge`: training runs
and the checkpoints they write."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from videorl import api
from videorl.cli.options import TRAINING, flags_of
from videorl.cli.output import console, warn

if TYPE_CHECKING:
    from videorl.config import Config


@dataclass(frozen=True)
class TrainingJob:
    """What `videorl train` and `videorl sft` are given (their shared options: `TRAINING`)."""

    config: str
    overrides: list[str] | None = None
    dry_run: bool = False
    resume: str | None = None
    nproc: int = 0
    overwrite: bool = False


TrainRecipe = Annotated[
    str, typer.Argument(help="Recipe YAML path or name in configs/ (e.g. quickstart).")
]
SftRecipe = Annotated[
    str, typer.Argument(help="Recipe YAML path or name in configs/ (e.g. sft_quickstart).")
]


@flags_of(TrainingJob, {"config": TrainRecipe, **TRAINING})
def train(**flags: Any) -> None:
    """Train a policy with the recipe's algorithm (GRPO, OraRL, TaRO, OPDVR, ...)."""

    def show_plan(cfg: Config) -> None:
        from videorl.config.plan import model_sources, plan_step, plan_table, sources_table

        console.print(plan_table(plan_step(cfg)))
        sources = model_sources(cfg)
        console.print(sources_table(sources))
        for source in sources:
            if source.error:
                console.print(
                    f"[yellow]warning:[/] {source.error}", highlight=False, soft_wrap=True
                )

    job = TrainingJob(**flags)
    cfg = _training_job("train", job, show_plan)
    if cfg is not None:
        _exit_130_unless_final(cfg, api.train(cfg, resume=job.resume, overwrite=job.overwrite))


@flags_of(TrainingJob, {"config": SftRecipe, **TRAINING})
def sft(**flags: Any) -> None:
    """Supervised warm start: response-only next-token loss on annotation (or TaRO constructed)
    targets; final/ is a model folder that `videorl train` takes as model.path."""

    def show_plan(cfg: Config) -> None:
        from videorl.config.plan import sft_plan_table

        console.print(sft_plan_table(cfg))

    job = TrainingJob(**flags)
    cfg = _training_job("sft", job, show_plan)
    if cfg is not None:
        _exit_130_unless_final(cfg, api.sft(cfg, resume=job.resume, overwrite=job.overwrite))


def _exit_130_unless_final(cfg: Config, path: Path) -> None:
    """Exit 130 (a Ctrl-C's code) when the run stopped before `final/`: it was interrupted
    and saved, so `videorl train ... && videorl eval ...` stops there."""
    if path != Path(cfg.trainer.output_dir) / "final":
        raise typer.Exit(130)


def _training_job(
    command: str, job: TrainingJob, show_plan: Callable[[Config], None]
) -> Config | None:
    """The config of a `train`/`sft` run in this process, or None when done here: printed
    (`--dry-run`) or relaunched under torchrun (`--nproc N`)."""
    import yaml

    cfg = api.load_config(job.config, job.overrides or [])
    from videorl.config import check_device_available
    from videorl.config.loader import to_dict

    if job.resume is not None:  # the overrides against the saved run: refused, or applied
        from videorl.trainer.resume_config import reconcile_resume

        cfg, notes = reconcile_resume(cfg, job.resume)
        for note in notes if os.environ.get("RANK", "0") == "0" else []:
            console.print(f"resume: {note}", highlight=False, soft_wrap=True)
    if job.dry_run:
        from videorl.config.plan import run_warnings
        from videorl.trainer.policy_setup import run_tools

        run_tools(cfg)  # as the run does first: an unknown tool is a one-line error
        console.print(yaml.safe_dump(to_dict(cfg), sort_keys=False), end="")
        show_plan(cfg)
        for warning in run_warnings(cfg):
            warn(warning)
        return None
    check_device_available("trainer.device", cfg.trainer.device)
    if job.nproc > 1:
        extra = ["--overwrite"] if job.overwrite else []
        args = [job.config, *(job.overrides or []), f"trainer.nproc={job.nproc}", *extra]
        _relaunch_with_torchrun(job.nproc, args, job.resume, command)
    return cfg


def _relaunch_with_torchrun(
    nproc: int, args: list[str], resume: str | None, command_name: str = "train"
) -> None:
    """`videorl train --nproc N ...` is `torchrun --nproc-per-node N -m videorl train ...`."""
    import shutil

    torchrun = shutil.which("torchrun") or str(Path(sys.executable).with_name("torchrun"))
    command = [
        torchrun,
        "--standalone",
        f"--nproc-per-node={nproc}",
        "-m",
        "videorl",
        command_name,
        *args,
    ]
    if resume:
        command += ["--resume", resume]
    os.execv(torchrun, command)


def quickstart(
    overwrite: bool = typer.Option(
        False, "--overwrite", help="Rerun every step, replacing what an earlier quickstart wrote."
    ),
    tools: bool = typer.Option(
        False,
        "--tools",
        help="Run the tools quickstart instead (what `make tools-quickstart` runs, "
        "docs/tools.md): a seeing model, two SFT stages on get_clip trajectories, GRPO with "
        "get_clip, eval with tools; under runs/tools_quickstart/.",
    ),
    seed: int = typer.Option(
        0,
        "--seed",
        help="Draw the tiny model, the synthetic videos and the runs' sampling with this seed "
        "(it is added to each command; 0: the commands as the README lists them).",
    ),
) -> None:
    """Run the README's quickstart (what `make quickstart` runs, without make): a tiny model,
    synthetic videos, SFT, OraRL, eval of both checkpoints with video controls, the
    before/after table; everything under runs/quickstart/, on the threads OMP_NUM_THREADS
    allows (every core unless set)."""
    import subprocess

    from rich.markup import escape

    from videorl.quickstart import QUICKSTART_DIR, STEPS, TOOLS_DIR, TOOLS_STEPS, seeded

    for step in seeded(TOOLS_STEPS if tools else STEPS, seed):
        extra = ["--overwrite"] if overwrite and step.overwrite else []
        line = f"$ {step.command}{' --overwrite' if extra else ''}"
        console.print(f"[bold]{escape(line)}[/]", highlight=False, soft_wrap=True)
        code = subprocess.call([sys.executable, "-m", "videorl", *step.argv, *extra])
        if code:
            raise typer.Exit(code)
    qs, tq = QUICKSTART_DIR, TOOLS_DIR
    console.print(
        f"tools model: {tq}/train/final  metrics: {tq}/train/metrics.jsonl  "
        f"report: {tq}/eval/report.md"
        if tools
        else f"SFT: {qs}/sft/final  OraRL: {qs}/train/final  metrics: {qs}/train/metrics.jsonl  "
        f"curves: {qs}/train/reward_curves.png  report: {qs}/eval/report.md",
        highlight=False,
        soft_wrap=True,
    )


def merge(
    checkpoint: Path = typer.Argument(
        ..., help="A step-NNNNNN checkpoint folder (sharded or not), or a LoRA adapter folder."
    ),
    out: Path = typer.Argument(..., help="Output Hugging Face model folder."),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="Replace OUT if it already holds files."
    ),
) -> None:
    """Gather a sharded checkpoint, or merge a LoRA adapter into its base, as one Hugging Face
    folder (weights, config, tokenizer, processor)."""
    from videorl.trainer.checkpoint import merge_checkpoint

    console.print(f"wrote {merge_checkpoint(checkpoint, out, overwrite=overwrite)}")
