"""`videorl recipes`, `videorl keys` and `videorl doctor`: what there is to run, what a
config can set, and whether this machine can run it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

import typer

from videorl.api import CONFIG_DIR, packaged_recipes
from videorl.cli.output import console


def recipe_summary(path: Path) -> str:
    """The first sentence of the recipe's opening comment, whole (what it trains, on what),
    however many comment lines it spans."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("#").strip())
    text = re.sub(r"(?<=\w-) (?=\w)", "", " ".join(lines))  # "temporal-\nsensitivity"
    end = re.search(r"\.(\s|$)", text)  # "Qwen2.5-VL" is not a sentence's end
    return text[: end.start() + 1] if end else text


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
