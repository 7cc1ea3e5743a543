"""The `videorl` command line: one subcommand per job."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from videorl.cli_help import ROOT_EXAMPLES, examples_block, polish_help
from videorl.errors import VideoRLError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="RL post-training of video multimodal LLMs. `videorl quickstart` runs the whole path "
    "on a CPU in minutes; `videorl COMMAND -h` explains each command.",
    epilog=examples_block(ROOT_EXAMPLES),
    context_settings={"help_option_names": ["-h", "--help"]},
)
console = Console()


def _print_version(value: bool) -> None:
    if value:
        from videorl import __version__

        console.print(f"videorl {__version__}", highlight=False)
        raise typer.Exit()


VERBOSE = "--verbose"


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True, help="Print the version."
    ),
    verbose: bool = typer.Option(
        False,
        VERBOSE,
        help="Show the progress bars of transformers and the Hub (loading weights, writing "
        "shards, downloads), hidden otherwise; accepted anywhere on the command line.",
    ),
) -> None:
    """The options before any command (`videorl --version`)."""


def quiet_progress_bars(argv: list[str]) -> list[str]:
    """`argv` without `--verbose`; without it, transformers' and the Hub's progress bars
    are turned off (HF_HUB_DISABLE_PROGRESS_BARS=1 unless the user set it, before either is
    imported). The variable is inherited by torchrun's and the quickstart's child
    processes, so `--verbose` sets it to 0 for them too."""
    if VERBOSE in argv:
        os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "0"
        return [arg for arg in argv if arg != VERBOSE]
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    return argv


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


def packaged_recipes() -> dict[str, Path]:
    """Recipe name -> YAML file shipped in the package (videorl/recipes/*.yaml)."""
    return {path.stem: path for path in sorted(CONFIG_DIR.glob("*.yaml"))}


def recipe_summary(path: Path) -> str:
    """The first sentence of the recipe's opening comment, whole (what it trains, on what),
    however many comment lines it spans."""
    import re

    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("#").strip())
    text = re.sub(r"(?<=\w-) (?=\w)", "", " ".join(lines))  # "temporal-\nsensitivity"
    end = re.search(r"\.(\s|$)", text)  # "Qwen2.5-VL" is not a sentence's end
    return text[: end.start() + 1] if end else text


@app.command("recipes")
def recipes() -> None:
    """List the recipes shipped with videorl (`videorl train NAME` runs one)."""
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=f"Recipes ({CONFIG_DIR})", show_header=True)
    table.add_column("name")
    table.add_column("what it runs", overflow="fold")
    for name, path in packaged_recipes().items():
        table.add_row(name, escape(recipe_summary(path)))
    console.print(table)
    console.print(
        "run one with `videorl train NAME` (the sft recipes: `videorl sft NAME`); copy its YAML "
        "to change more than overrides",
        soft_wrap=True,
    )


@app.command("keys")
def keys(
    prefix: Annotated[
        str, typer.Argument(help="A section or key, e.g. algorithm.pruning (default: all).")
    ] = "",
) -> None:
    """Explain the config keys a recipe or an override can set: type, default, meaning."""
    import textwrap

    from rich.markup import escape

    from videorl.config.reference import all_fields, meaning
    from videorl.errors import ConfigError

    section = prefix.rstrip(".")
    rows = [f for f in all_fields() if not section or f"{f.key}.".startswith(f"{section}.")]
    if not rows:
        sections = ", ".join(f.key for f in all_fields() if "." not in f.key)
        raise ConfigError(f"no config key {prefix!r}; the sections are {sections}")
    for row in rows:
        default = f" = {row.default}" if row.default else ""
        console.print(f"[bold]{row.key}[/]: {escape(row.type)}{escape(default)}", highlight=False)
        text = textwrap.fill(meaning(row, markdown=False), width=max(40, console.width - 4))
        console.print(textwrap.indent(escape(text), "    "), highlight=False)


@app.command("make-tiny")
def make_tiny(
    out: Path = typer.Argument(..., help="Folder to write the model to."),
    arch: str = typer.Option(
        "qwen2_5_vl", help="qwen2_5_vl | qwen3_vl | qwen3_5 | qwen3 (text-only)."
    ),
    size: str = typer.Option(
        "tiny",
        help="tiny (~0.4 M params, tests) | bench (~30 M params) | published dimensions: "
        "3b, 7b (qwen2_5_vl); 4b, 8b (qwen3_vl); 4b, 9b (qwen3_5).",
    ),
    seed: int = typer.Option(0, help="Initialization seed."),
    device: str = typer.Option(
        "cpu", help="Create and initialize the weights here (cpu, cuda, cuda:N)."
    ),
    dtype: str = typer.Option("float32", help="float32 | bfloat16 | float16."),
    layers: int | None = typer.Option(None, help="Fewer decoder layers (same widths)."),
    vision_depth: int | None = typer.Option(None, help="Fewer vision-tower blocks (same widths)."),
    small_vocab: bool = typer.Option(
        False, help="Embeddings sized to our tokenizer, not the published vocabulary."
    ),
    vision_warmup: int = typer.Option(
        0,
        help="Steps of a self-supervised warm-up of the vision tower on synthetic clips, a "
        "stand-in for a pretrained encoder (0: the random tower; the quickstart uses 150).",
    ),
    vision_warmup_clips: str = typer.Option(
        "shape",
        help="The warm-up's clips: shape (one shape on a plain screen, the quickstart's "
        "scenes) or broad (textured moving backgrounds, camera sway, noise, many objects; "
        "targets from the clean content: docs/lab/models-that-see.md).",
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="Write into a non-empty OUT."),
) -> None:
    """Build a random-init model offline and save it like a real checkpoint."""
    import torch

    from videorl.outputs import refuse_nonempty

    refuse_nonempty(out, overwrite=overwrite, option="OUT")

    from videorl.errors import ConfigError
    from videorl.models.tiny import build_model
    from videorl.models.vision_warmup import WarmupSettings

    if dtype not in ("float32", "bfloat16", "float16"):
        raise ConfigError(f"--dtype {dtype!r} is unknown; choose float32, bfloat16 or float16")
    from videorl.data.synth_clips import CLIP_KINDS

    if vision_warmup_clips not in CLIP_KINDS:
        raise ConfigError(
            f"--vision-warmup-clips {vision_warmup_clips!r} is unknown; choose "
            f"{' or '.join(CLIP_KINDS)}"
        )
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"--device {device}: no CUDA GPU here; use --device cpu")
    built = build_model(
        arch,
        out,
        size=size,
        seed=seed,
        device=device,
        dtype=getattr(torch, dtype),
        layers=layers,
        vision_depth=vision_depth,
        small_vocab=small_vocab,
        vision_warmup=(
            WarmupSettings(steps=vision_warmup, seed=seed, kind=vision_warmup_clips)
            if vision_warmup
            else None
        ),
    )
    vocab = (
        f"; {built.embedding_rows} embedding rows (published vocab size), our tokenizer uses "
        f"{built.tokenizer_size}"
        if built.embedding_rows > built.tokenizer_size
        else ""
    )
    console.print(
        f"wrote {arch} ({size}, {built.params / 1e6:.2f} M params, {dtype}{vocab}) to "
        f"{built.path} in {built.seconds:.1f} s"
    )
    if built.vision_warmup is not None:
        report = built.vision_warmup
        console.print(
            f"vision tower warmed up: {report.steps} steps, loss {report.first_loss:.3f} -> "
            f"{report.last_loss:.3f} in {report.seconds:.1f} s"
        )


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
    tg_events: str = typer.Option(
        "appear,colour,move",
        help="Temporal-grounding event kinds to draw from: a shape appears on an empty "
        "screen, changes colour, or moves (the quickstart uses appear).",
    ),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="Replace what an earlier synth wrote into --out."
    ),
) -> None:
    """Write synthetic MP4 videos and exact-ground-truth records for the chosen families.

    With --val, the manifest also records each family's blind best on the validation set:
    the best fixed answer given only the prompt (`eval/blind.py`), the floor a model must
    beat by looking."""
    from videorl.data.synth import write_dataset

    events = tuple(e.strip() for e in tg_events.split(",") if e.strip())
    manifest = write_dataset(
        out, families.split(","), n=n, val=val, seed=seed, overwrite=overwrite, tg_events=events
    )
    console.print(
        f"wrote {manifest['records']['train']} training and {manifest['records']['val']} "
        f"validation records ({', '.join(manifest['families'])}) to {out} (manifest.json)"
    )
    if val:
        for family, numbers in _record_blind_best(out).items():
            scores = ", ".join(f"{k} {v:.1f}" for k, v in numbers.items() if k != "answer")
            console.print(f"blind best, {family} (val): {scores}  ({numbers['answer']})")


def _record_blind_best(out: Path) -> dict[str, dict]:
    """Fit the blind baselines on train.jsonl, score val.jsonl, add them to the manifest."""
    import json

    from videorl.data.loaders import load_records
    from videorl.data.synth import MANIFEST
    from videorl.eval.blind import blind_best

    train = load_records(out / "train.jsonl").records
    found = blind_best(train, load_records(out / "val.jsonl").records)
    manifest = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    manifest["blind_best"] = found
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return found


@app.command("prepare")
def prepare(
    sources: Path = typer.Option(
        ...,
        "--sources",
        help="SOURCES.yaml: sources, quotas, benchmarks, seed, canary (its format: "
        "docs/data.md, Training mixtures).",
    ),
    out: Path = typer.Option(
        ..., "--out", help="Folder for train.jsonl, canary.jsonl and manifest.json."
    ),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="Replace the mixture files if --out already holds files."
    ),
) -> None:
    """Build a training mixture: quotas, de-duplication, benchmark-leakage exclusion, manifest."""
    from videorl.data.prepare import prepare as prepare_mixture

    result = prepare_mixture(sources, out, overwrite=overwrite)
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


# The options `videorl train` and `videorl sft` share.
Overrides = Annotated[
    list[str] | None,
    typer.Argument(
        help="Dotted overrides, e.g. rollout.n=4 trainer.steps=3 (`videorl keys` lists them)"
    ),
]
DryRun = Annotated[
    bool, typer.Option("--dry-run", help="Print the resolved config and the step plan, then exit.")
]
Resume = Annotated[
    str | None,
    typer.Option(help="auto (latest checkpoint in the output dir) or a checkpoint path."),
]
Nproc = Annotated[
    int, typer.Option(help="Run data-parallel on this many local processes (torchrun shortcut).")
]
Overwrite = Annotated[
    bool,
    typer.Option("--overwrite", help="Replace the run in trainer.output_dir (its files only)."),
]


@app.command("train")
def train(
    config: Annotated[
        str, typer.Argument(help="Recipe YAML path or name in configs/ (e.g. quickstart).")
    ],
    overrides: Overrides = None,
    dry_run: DryRun = False,
    resume: Resume = None,
    nproc: Nproc = 0,
    overwrite: Overwrite = False,
) -> None:
    """Train a policy with the recipe's algorithm (GRPO, OraRL, TaRO, OPDVR, ...)."""

    def show_plan(cfg) -> None:
        from videorl.config.plan import model_sources, plan_step, plan_table, sources_table

        console.print(plan_table(plan_step(cfg)))
        sources = model_sources(cfg)
        console.print(sources_table(sources))
        for source in sources:
            if source.error:
                console.print(
                    f"[yellow]warning:[/] {source.error}", highlight=False, soft_wrap=True
                )

    cfg = _training_job("train", config, overrides, dry_run, resume, nproc, overwrite, show_plan)
    if cfg is not None:
        from videorl.trainer.loop import run_training

        _exit_130_unless_final(cfg, run_training(cfg, resume=resume, overwrite=overwrite))


def _exit_130_unless_final(cfg, path: Path) -> None:
    """Exit 130 (a Ctrl-C's code) when the run stopped before `final/`: it was interrupted
    and saved, so `videorl train ... && videorl eval ...` stops there."""
    if path != Path(cfg.trainer.output_dir) / "final":
        raise typer.Exit(130)


def _training_job(
    command: str,
    config: str,
    overrides: list[str] | None,
    dry_run: bool,
    resume: str | None,
    nproc: int,
    overwrite: bool,
    show_plan,
):
    """The config of a `train`/`sft` run in this process, or None when done here: printed
    (`--dry-run`) or relaunched under torchrun (`--nproc N`)."""
    import yaml
    from rich.markup import escape

    from videorl.config.keys import check_recipe_keys

    check_recipe_keys(resolve_config_path(config), overrides or [])  # a typo, before torch loads
    from videorl.config import check_device_available, load_config
    from videorl.config.loader import to_dict

    cfg = load_config(resolve_config_path(config), overrides or [])
    if resume is not None:  # the overrides against the saved run: refused, or applied for real
        from videorl.trainer.resume_config import reconcile_resume

        cfg, notes = reconcile_resume(cfg, resume)
        for note in notes if os.environ.get("RANK", "0") == "0" else []:
            console.print(f"resume: {note}", highlight=False, soft_wrap=True)
    if dry_run:
        from videorl.trainer.policy_setup import run_tools

        run_tools(cfg)  # as the run does first: an unknown tool is a one-line error
        console.print(yaml.safe_dump(to_dict(cfg), sort_keys=False), end="")
        show_plan(cfg)
        from videorl.config.plan import run_warnings

        for warning in run_warnings(cfg):
            console.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False, soft_wrap=True)
        return None
    check_device_available("trainer.device", cfg.trainer.device)
    if nproc > 1:
        extra = ["--overwrite"] if overwrite else []
        args = [config, *(overrides or []), f"trainer.nproc={nproc}", *extra]
        _relaunch_with_torchrun(nproc, args, resume, command)
    return cfg


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
    config: Annotated[
        str, typer.Argument(help="Recipe YAML path or name in configs/ (e.g. sft_quickstart).")
    ],
    overrides: Overrides = None,
    dry_run: DryRun = False,
    resume: Resume = None,
    nproc: Nproc = 0,
    overwrite: Overwrite = False,
) -> None:
    """Supervised warm start: response-only next-token loss on annotation (or TaRO constructed)
    targets; final/ is a model folder that `videorl train` takes as model.path."""

    def show_plan(cfg) -> None:
        from videorl.config.plan import sft_plan_table

        console.print(sft_plan_table(cfg))

    cfg = _training_job("sft", config, overrides, dry_run, resume, nproc, overwrite, show_plan)
    if cfg is not None:
        from videorl.trainer.sft import run_sft

        _exit_130_unless_final(cfg, run_sft(cfg, resume=resume, overwrite=overwrite))


@app.command("quickstart")
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
) -> None:
    """Run the README's quickstart (what `make quickstart` runs, without make): a tiny model,
    synthetic videos, SFT, OraRL, eval of both checkpoints with video controls, the
    before/after table; everything under runs/quickstart/, on one thread."""
    import subprocess

    from rich.markup import escape

    from videorl.quickstart import QUICKSTART_DIR, STEPS, TOOLS_DIR, TOOLS_STEPS

    # One thread: the tiny model's SFT is sensitive to floating-point order, and on one thread
    # the run repeats bench/seeds.py's seed-0 row (README).
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    for step in TOOLS_STEPS if tools else STEPS:
        extra = ["--overwrite"] if overwrite and step.overwrite else []
        line = f"$ {step.command}{' --overwrite' if extra else ''}"
        console.print(f"[bold]{escape(line)}[/]", highlight=False, soft_wrap=True)
        code = subprocess.call([sys.executable, "-m", "videorl", *step.argv, *extra], env=env)
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
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing --out file."),
) -> None:
    """Score given response texts with the training rewards and print a summary per family."""
    import json

    from videorl.config.keys import check_recipe_keys

    check_recipe_keys(None, overrides or [])  # a typo, before torch loads
    from videorl.config import load_config
    from videorl.errors import ConfigError
    from videorl.outputs import refuse_own_inputs
    from videorl.rewards.score_file import score_file

    if out is not None:
        refuse_own_inputs(out, [("--records", records), ("--responses", responses)], "--out")
        if out.exists() and not (overwrite and out.is_file()):
            raise ConfigError(
                f"--out {str(out)!r} already exists; pass --overwrite to replace it "
                "or choose another file"
            )

    reward_config = load_config(None, overrides or []).reward
    summary = score_file(records, responses, out, reward_config)
    console.print_json(json.dumps(summary))


@app.command("merge")
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


# `videorl eval` and `videorl serve`: eval/commands.py and serve/commands.py import only typer
# (models, torch, matplotlib and the server are imported inside the commands).
from videorl.eval.commands import eval_command
from videorl.eval.options import EarlyExitConfidence, check_early_exit
from videorl.serve.commands import serve_command

app.command("eval")(eval_command)
app.command("serve")(serve_command)


@app.command("demo")
def demo(
    model: Path = typer.Option(
        ...,
        "--model",
        help="Checkpoint folder or Hugging Face Hub id (org/name[@rev]) of a vision-language model.",
    ),
    host: str = typer.Option(
        "127.0.0.1", help="Address to bind; 0.0.0.0 opens the demo to your network."
    ),
    port: int | None = typer.Option(None, help="Port (default: the first free one from 7860)."),
    share: bool = typer.Option(False, "--share", help="Also make a public gradio share link."),
    max_duration: float = typer.Option(600.0, help="Longest video accepted, in seconds."),
    device: str = typer.Option("auto", help="auto (cuda if available) | cpu | cuda | cuda:N."),
    auth: str | None = typer.Option(
        None, envvar="VIDEORL_DEMO_AUTH", help="USER:PASS a visitor must give (needed by --share)."
    ),
    max_upload_mb: float = typer.Option(500.0, help="Largest video upload accepted, in MB."),
    max_frames: int = typer.Option(512, help="Most frames a question may decode."),
    early_exit_confidence: EarlyExitConfidence = None,
) -> None:
    """Web app: ask a video a question and see the answer on its timeline."""
    from videorl.demo.guard import DemoLimits, parse_auth

    parse_auth(auth, share)  # a public link without a password is refused before anything loads
    check_early_exit(early_exit_confidence, model=str(model))
    limits = DemoLimits(max_upload_mb=max_upload_mb, max_frames=max_frames)
    from videorl.demo.app import serve

    serve(
        model,
        host=host,
        port=port,
        share=share,
        max_duration=max_duration,
        device=device,
        auth=auth,
        limits=limits,
        early_exit=early_exit_confidence,
    )


@app.command("doctor")
def doctor(
    json_out: Path | None = typer.Option(None, "--json", help="Also write the report here (JSON)."),
) -> None:
    """Versions (against the supported ranges), GPUs, attention kernels and packing modes."""
    import json

    from videorl.doctor import collect, render

    report = collect()
    render(report, console)
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(report, indent=2) + "\n")
    if not report["supported"]:
        raise typer.Exit(1)


polish_help(app)  # after the last command: unwrapped docstrings and an Examples block each


def main() -> None:
    """Entry point: user errors become one red line and exit code 2, not a traceback."""
    sys.argv[1:] = quiet_progress_bars(sys.argv[1:])
    try:
        app()
    except VideoRLError as err:
        from rich.markup import escape  # "pip install 'videorl[wandb]'" is text, not markup

        console.print(f"[bold red]error:[/] {escape(str(err))}", highlight=False, soft_wrap=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
