"""`videorl make-tiny`, `videorl synth` and `videorl prepare`: a model and data to train on."""

from __future__ import annotations

from pathlib import Path

import typer

from videorl import api
from videorl.cli.output import console


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
    built = api.make_tiny(
        out,
        arch,
        size=size,
        seed=seed,
        device=device,
        dtype=dtype,
        layers=layers,
        vision_depth=vision_depth,
        small_vocab=small_vocab,
        vision_warmup=vision_warmup,
        vision_warmup_clips=vision_warmup_clips,
        overwrite=overwrite,
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
    tg_grid: float = typer.Option(
        0.5,
        help="Temporal grounding: the grid of the event's bounds in seconds, 0.5 (a frame of "
        "a 2 fps sample) or 1 (a Qwen temporal patch of two such frames, whose one textual "
        "timestamp the model can copy; the quickstart uses 1).",
    ),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="Replace what an earlier synth wrote into --out."
    ),
) -> None:
    """Write synthetic MP4 videos and exact-ground-truth records for the chosen families.

    With --val, the manifest also records each family's blind best on the validation set:
    the best fixed answer given only the prompt (`eval/blind.py`), the floor a model must
    beat by looking."""
    events = tuple(e.strip() for e in tg_events.split(",") if e.strip())
    manifest = api.synth(
        out,
        families.split(","),
        n=n,
        val=val,
        seed=seed,
        tg_events=events,
        tg_grid=tg_grid,
        overwrite=overwrite,
    )
    console.print(
        f"wrote {manifest['records']['train']} training and {manifest['records']['val']} "
        f"validation records ({', '.join(manifest['families'])}) to {out} (manifest.json)"
    )
    for family, numbers in manifest.get("blind_best", {}).items():
        scores = ", ".join(f"{k} {v:.1f}" for k, v in numbers.items() if k != "answer")
        console.print(f"blind best, {family} (val): {scores}  ({numbers['answer']})")


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
