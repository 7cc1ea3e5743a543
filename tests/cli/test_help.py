"""The help pages a newcomer reads: `-h`, `--version`, whole texts that the formatter
wraps (never hard line breaks), an Examples block per command, whole recipe summaries."""

from __future__ import annotations

import inspect
import re

import pytest

from tests.cli_runner import run_cli
from videorl import __version__, cli
from videorl.api import packaged_recipes
from videorl.cli.help import EXAMPLES, unwrap
from videorl.cli.info import recipe_summary

COMMANDS = sorted(EXAMPLES)


def test_version_and_short_help(capsys, monkeypatch):
    version = run_cli(capsys, monkeypatch, "--version")
    assert version.code == 0 and version.lines == [f"videorl {__version__}"]
    short = run_cli(capsys, monkeypatch, "-h")
    assert short.code == 0 and "Usage:" in short.output and "Examples:" in short.output
    assert "videorl quickstart" in short.output


def test_every_command_is_listed_with_examples():
    registered = {info.name for info in cli.app.registered_commands}
    assert registered == set(EXAMPLES)


@pytest.mark.parametrize("command", COMMANDS)
def test_each_command_help_has_examples_and_unwrapped_prose(command, capsys, monkeypatch):
    """At a wide terminal every prose paragraph of the docstring is one line (the formatter
    wraps it to the terminal, not the source's line breaks); the examples follow."""
    monkeypatch.setenv("COLUMNS", "2000")
    result = run_cli(capsys, monkeypatch, command, "-h")
    assert result.code == 0, result.output
    lines = [line.strip(" │") for line in result.lines]
    assert "Examples:" in lines
    examples = lines[lines.index("Examples:") + 1 :]
    assert examples == list(EXAMPLES[command])
    (info,) = [i for i in cli.app.registered_commands if i.name == command]
    for paragraph in unwrap(inspect.getdoc(info.callback) or "").split("\n\n"):
        assert paragraph in lines


@pytest.mark.parametrize("command", COMMANDS)
def test_no_help_text_is_cut_off_or_eaten(command, capsys, monkeypatch):
    """At 100 columns no option's help ends in an ellipsis; `[@rev]` is text, not markup."""
    monkeypatch.setenv("COLUMNS", "100")
    result = run_cli(capsys, monkeypatch, command, "--help")
    assert "…" not in result.output
    if command in ("eval", "demo"):
        assert "org/name[@rev]" in result.output


def test_unwrap_keeps_indented_blocks():
    text = "One\n    line.\n\nSecond\nparagraph.\n\n    videorl a\n    videorl b"
    assert unwrap(text) == "One line.\n\nSecond paragraph.\n\n    videorl a\n    videorl b"


def test_recipes_shows_whole_summaries_without_tracker_numbers(capsys, monkeypatch):
    monkeypatch.setattr(cli.console, "width", 1000)
    result = run_cli(capsys, monkeypatch, "recipes")
    assert result.code == 0
    for name, path in packaged_recipes().items():
        summary = recipe_summary(path)
        assert summary.endswith("."), (name, summary)
        assert not re.search(r"\b(issue|tracker) \d+|#\d+", summary), summary
        assert summary in result.output
    assert recipe_summary(packaged_recipes()["taro"]).endswith(
        "temporal-sensitivity reward) as published: Qwen2.5-VL-7B, 8 GPUs."
    )
