"""The `videorl` command line: one subcommand per job."""

from __future__ import annotations

import sys
from pathlib import Path

import typer
from rich.console import Console

from videorl.errors import VideoRLError

app = typer.Typer(
    add_completion=False, no_args_is_help=True, help="RL post-training of video multimodal LLMs."
)
console = Console()

CONFIG_DIR = Path(__file__).resolve().parent / "recipes"  # configs/ in the repo links here


def resolve_config_path(name: str) -> Path:
    """A YAML path, or the name of a packaged recipe (`quickstart` -> videorl/recipes/quickstart.yaml)."""
    path = Path(name)
    if path.is_file():
        return path
    for candidate in (CONFIG_DIR / name, CONFIG_DIR / f"{name}.yaml"):
        if candidate.is_file():
            return candidate
    return path


@app.command("make-tiny")
def make_tiny(
    out: Path = typer.Argument(..., help="Folder to write the model to."),
    arch: str = typer.Option(
        "qwen2_5_vl", help="qwen2_5_vl | qwen3_vl | qwen3_5 | qwen3 (text-only)."
    ),
    size: str = typer.Option("tiny", help="tiny (~0.4 M params, tests) | bench (~30 M params)."),
    seed: int = typer.Option(0, help="Initialization seed."),
) -> None:
    """Build a random-init model offline and save it like a real checkpoint."""
    from videorl.models.tiny import build_tiny_model, count_parameters

    path = build_tiny_model(arch, out, size=size, seed=seed)
    from videorl.models.loading import load_model

    params = count_parameters(load_model(path).model)
    console.print(f"wrote {arch} ({size}, {params / 1e6:.2f} M params) to {path}")


@app.command("synth")
def synth(
    out: Path = typer.Option(..., help="Output folder for videos and records."),
    families: str = typer.Option(
        "all", help="'all' or comma-separated family names/aliases (tg,sg,qa,...)."
    ),
    n: int = typer.Option(16, help="Training records per family."),
    val: int = typer.Option(
        0, help="Extra records per family written to val.jsonl (disjoint videos)."
    ),
    seed: int = typer.Option(0, help="Random seed (same seed, same files)."),
) -> None:
    """Write synthetic MP4 videos and exact-ground-truth records for the chosen families."""
    from videorl.data.loaders import load_records, write_records
    from videorl.data.synth import synthesize

    records_path = synthesize(out, families.split(","), n=n + val, seed=seed)
    records = load_records(records_path).records
    by_family: dict[str, list] = {}
    for record in records:
        by_family.setdefault(record.family.value, []).append(record)
    train_rows = [r for rows in by_family.values() for r in rows[:n]]
    val_rows = [r for rows in by_family.values() for r in rows[n:]]
    write_records(out / "train.jsonl", train_rows)
    if val_rows:
        write_records(out / "val.jsonl", val_rows)
    console.print(
        f"wrote {len(train_rows)} training and {len(val_rows)} validation records "
        f"({', '.join(by_family)}) to {out}"
    )


@app.command("prepare")
def prepare(
    sources: Path = typer.Option(
        ..., "--sources", help="SOURCES.yaml: sources, quotas, benchmarks, seed, canary."
    ),
    out: Path = typer.Option(
        ..., "--out", help="Folder for train.jsonl, canary.jsonl and manifest.json."
    ),
) -> None:
    """Build a training mixture: quotas, de-duplication, benchmark-leakage exclusion, manifest."""
    from videorl.data.prepare import prepare as prepare_mixture

    result = prepare_mixture(sources, out)
    manifest = result.manifest
    for name, entry in manifest["sources"].items():
        counts = entry["counts"]
        console.print(
            f"{name}: {counts['selected']} selected of {counts['loaded']} loaded "
            f"({counts['leaked']} leaked, {counts['duplicates']} duplicates, "
            f"{counts['canary']} canary)"
        )
    console.print(
        f"wrote {manifest['train']['records']} training and "
        f"{manifest['canary']['records']} canary records to {out} (manifest.json)"
    )


@app.command("train")
def train(
    config: str = typer.Argument(
        ..., help="Recipe YAML path or name in configs/ (e.g. quickstart)."
    ),
    overrides: list[str] | None = typer.Argument(
        None, help="Dotted overrides, e.g. rollout.n=4 trainer.steps=3"
    ),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Print the resolved config and the step plan, then exit."
    ),
    resume: str | None = typer.Option(
        None, help="auto (latest checkpoint in the output dir) or a checkpoint path."
    ),
    nproc: int = typer.Option(
        0, help="Run data-parallel on this many local processes (torchrun shortcut)."
    ),
) -> None:
    """Train a policy with the recipe's algorithm (GRPO, OraRL, TaRO, OPDVR, ...)."""
    import yaml

    from videorl.config import load_config
    from videorl.config_loader import to_dict
    from videorl.plan import plan_step, plan_table

    cfg = load_config(resolve_config_path(config), overrides or [])
    if dry_run:
        console.print(yaml.safe_dump(to_dict(cfg), sort_keys=False), end="")
        console.print(plan_table(plan_step(cfg)))
        return
    if nproc > 1:
        _relaunch_with_torchrun(
            nproc, [config, *(overrides or []), f"trainer.nproc={nproc}"], resume
        )
    from videorl.trainer.loop import run_training

    run_training(cfg, resume=resume)


def _relaunch_with_torchrun(
    nproc: int, args: list[str], resume: str | None, command_name: str = "train"
) -> None:
    """`videorl train --nproc N ...` is `torchrun --nproc-per-node N -m videorl train ...`."""
    import os
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


@app.command("sft")
def sft(
    config: str = typer.Argument(
        ..., help="Recipe YAML path or name in configs/ (e.g. sft_quickstart)."
    ),
    overrides: list[str] | None = typer.Argument(
        None, help="Dotted overrides, e.g. sft.target=constructed trainer.steps=50"
    ),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Print the resolved config and the step plan, then exit."
    ),
    resume: str | None = typer.Option(
        None, help="auto (latest checkpoint in the output dir) or a checkpoint path."
    ),
    nproc: int = typer.Option(
        0, help="Run data-parallel on this many local processes (torchrun shortcut)."
    ),
) -> None:
    """Supervised warm start: response-only next-token loss on annotation (or TaRO constructed)
    targets; final/ is a model folder that `videorl train` takes as model.path."""
    import yaml

    from videorl.config import load_config
    from videorl.config_loader import to_dict
    from videorl.plan import sft_plan_table

    cfg = load_config(resolve_config_path(config), overrides or [])
    if dry_run:
        console.print(yaml.safe_dump(to_dict(cfg), sort_keys=False), end="")
        console.print(sft_plan_table(cfg))
        return
    if nproc > 1:
        _relaunch_with_torchrun(
            nproc, [config, *(overrides or []), f"trainer.nproc={nproc}"], resume, "sft"
        )
    from videorl.trainer.sft import run_sft

    run_sft(cfg, resume=resume)


@app.command("score")
def score(
    records: Path = typer.Option(
        ..., help="Records JSONL (generic record format) with the ground truth."
    ),
    responses: Path = typer.Option(
        ..., help='JSONL of {"id": ..., "response": ...} (one model output per line).'
    ),
    out: Path | None = typer.Option(None, help="Write each row's reward components here (JSONL)."),
    overrides: list[str] | None = typer.Argument(
        None, help="reward.* overrides, e.g. reward.tg_shaping=iou_v2"
    ),
) -> None:
    """Score given response texts with the training rewards and print a summary per family."""
    import json

    from videorl.config import load_config
    from videorl.rewards.score_file import score_file

    reward_config = load_config(None, overrides or []).reward
    summary = score_file(records, responses, out, reward_config)
    console.print_json(json.dumps(summary))


@app.command("merge")
def merge(
    checkpoint: Path = typer.Argument(
        ..., help="A step-NNNNNN checkpoint folder (sharded or not)."
    ),
    out: Path = typer.Argument(..., help="Output Hugging Face model folder."),
) -> None:
    """Gather a sharded checkpoint into one Hugging Face folder (weights, config, tokenizer, processor)."""
    from videorl.trainer.checkpoint import merge_checkpoint

    console.print(f"wrote {merge_checkpoint(checkpoint, out)}")


# `videorl eval` and `videorl serve`: options in eval/commands.py, which imports only typer
# (models, torch and matplotlib are imported inside the commands).
from videorl.eval.commands import eval_command, serve_command

app.command("eval")(eval_command)
app.command("serve")(serve_command)


@app.command("demo")
def demo(
    model: Path = typer.Option(
        ..., "--model", help="Checkpoint folder of a vision-language model."
    ),
    host: str = typer.Option(
        "127.0.0.1", help="Address to bind; 0.0.0.0 opens the demo to your network."
    ),
    port: int | None = typer.Option(None, help="Port (default: the first free one from 7860)."),
    share: bool = typer.Option(False, "--share", help="Also make a public gradio share link."),
    max_duration: float = typer.Option(600.0, help="Longest video accepted, in seconds."),
    device: str = typer.Option("auto", help="auto (cuda if available) | cpu | cuda | cuda:N."),
) -> None:
    """Web app: ask a video a question and see the answer on its timeline."""
    from videorl.demo.app import serve

    serve(model, host=host, port=port, share=share, max_duration=max_duration, device=device)


def main() -> None:
    """Entry point: user errors become one red line and exit code 2, not a traceback."""
    try:
        app()
    except VideoRLError as err:
        console.print(f"[bold red]error:[/] {err}", highlight=False, soft_wrap=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
