"""The console every `videorl` command prints to (tests narrow or widen it)."""

from __future__ import annotations

from rich.console import Console

console = Console()


def warn(text: str) -> None:
    """A yellow `warning:` line, `text` shown as written (no rich markup)."""
    from rich.markup import escape

    console.print(f"[yellow]warning:[/] {escape(text)}", highlight=False, soft_wrap=True)
