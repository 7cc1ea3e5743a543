"""The `videorl` command line: one subcommand per job, each calling the `videorl.api`
function of that job (or the module behind it) and printing what it did."""

from __future__ import annotations

import os
import sys

import typer

from videorl.cli import data, evaluate, info, train
from videorl.cli.help import ROOT_EXAMPLES, examples_block, polish_help
from videorl.cli.output import console
from videorl.errors import VideoRLError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="RL post-training of video multimodal LLMs. `videorl quickstart` runs the whole path "
    "on a CPU in minutes; `videorl COMMAND -h` explains each command.",
    epilog=examples_block(ROOT_EXAMPLES),
    context_settings={"help_option_names": ["-h", "--help"]},
)


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


# The order of `videorl -h`'s command list.
COMMANDS = {
    "recipes": info.recipes,
    "keys": info.keys,
    "make-tiny": data.make_tiny,
    "synth": data.synth,
    "prepare": data.prepare,
    "train": train.train,
    "sft": train.sft,
    "quickstart": train.quickstart,
    "score": evaluate.score,
    "merge": train.merge,
    "eval": evaluate.eval_command,
    "serve": evaluate.serve_command,
    "demo": evaluate.demo,
    "doctor": info.doctor,
}
for _name, _command in COMMANDS.items():
    app.command(_name)(_command)
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
