"""The help pages of `videorl`: prose the formatter wraps, and an Examples block per command.

Docstrings are written wrapped at 100 columns; the help formatter keeps single line breaks,
so a terminal of another width showed them re-wrapped with orphan words. `polish_help`
joins each prose paragraph into one line (indented blocks are kept as written) and adds
the command's examples after its options, as `uv` and `vllm serve --help` do.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import Any

import typer
from rich.markup import escape
from typer.models import ParameterInfo

# Commands as a newcomer types them; the first of each is the most common.
EXAMPLES: dict[str, tuple[str, ...]] = {
    "recipes": ("videorl recipes", "videorl train quickstart --dry-run"),
    "keys": ("videorl keys", "videorl keys algorithm.pruning", "videorl keys trainer.steps"),
    "make-tiny": (
        "videorl make-tiny runs/quickstart/model --arch qwen3_vl --vision-warmup 150",
        "videorl make-tiny models/bench --arch qwen2_5_vl --size bench",
    ),
    "synth": (
        "videorl synth --out data --families all --n 16 --val 4 --seed 0",
        (
            "videorl synth --out runs/quickstart/data --families temporal_grounding "
            "--tg-events appear --n 256 --val 32 --tg-grid 1"
        ),
    ),
    "prepare": ("videorl prepare --sources SOURCES.yaml --out data/mixture",),
    "quickstart": (
        "videorl quickstart",
        "videorl quickstart --overwrite",
        "videorl quickstart --tools",
    ),
    "train": (
        "videorl train quickstart",
        "videorl train orarl --dry-run rollout.n=8",
        "videorl train quickstart trainer.steps=300 --resume auto",
        "videorl train grpo --nproc 8",
    ),
    "sft": (
        "videorl sft sft_quickstart",
        "videorl sft sft --nproc 8 model.path=Qwen/Qwen3-VL-8B-Instruct",
    ),
    "score": (
        "videorl score --records data/val.jsonl --responses answers.jsonl",
        (
            "videorl score --records data/val.jsonl --responses answers.jsonl --out scores.jsonl "
            "reward.tg_shaping=iou_v2"
        ),
    ),
    "merge": (
        "videorl merge runs/quickstart/train/step-000150 merged",
        "videorl merge runs/lora/final merged --overwrite",
    ),
    "eval": (
        (
            "videorl eval --model runs/quickstart/train/final --benchmark "
            "runs/quickstart/data/val.jsonl --controls frozen,reversed"
        ),
        "videorl eval --predictions answers.jsonl --benchmark data/val.jsonl --skip-invalid",
        "videorl eval --compare runs/quickstart/eval-sft runs/quickstart/eval",
        (
            "videorl eval --endpoint http://127.0.0.1:8000/v1 --served-model quickstart/final "
            "--benchmark charades_sta --video-root videos"
        ),
    ),
    "serve": (
        "videorl serve --model runs/quickstart/train/final",
        (
            "videorl serve --model Qwen/Qwen2.5-VL-7B-Instruct --port 8001 --host 0.0.0.0 "
            "--api-key KEY"
        ),
    ),
    "demo": (
        "videorl demo --model runs/quickstart/train/final",
        "videorl demo --model runs/quickstart/train/final --share --auth USER:PASS",
    ),
    "doctor": ("videorl doctor", "videorl doctor --json doctor.json"),
}
ROOT_EXAMPLES = (
    "videorl quickstart",
    "videorl recipes",
    "videorl train quickstart --dry-run",
    "videorl eval --help",
)


def unwrap(text: str) -> str:
    """`text` with each prose paragraph on one line; a paragraph whose lines are all
    indented (a command, a list) keeps its line breaks."""
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(
        p if all(line[:1].isspace() for line in p.splitlines()) else " ".join(p.split())
        for p in paragraphs
    )


def examples_block(commands: tuple[str, ...]) -> str:
    """The epilog that lists `commands` (rich markup escaped: `[...]` stays text)."""
    return "Examples:\n\n" + "\n".join(escape(c) for c in commands)


def _parameter_infos(callback: Callable[..., Any]) -> list[ParameterInfo]:
    """The typer `Option`/`Argument` declarations of a command (defaults and `Annotated`)."""
    hints = typing.get_type_hints(callback, include_extras=True)
    found = []
    for param in inspect.signature(callback).parameters.values():
        metadata = getattr(hints.get(param.name), "__metadata__", ())
        for candidate in (param.default, *metadata):
            if isinstance(candidate, ParameterInfo):
                found.append(candidate)
    return found


def polish_help(app: typer.Typer) -> None:
    """Unwrap every command's docstring and give it its Examples (a command without
    examples is a `KeyError` at import, so none can be added without them); texts are
    rich-markup escaped, so `org/name[@rev]` is shown whole."""
    escaped: set[int] = set()  # the flags eval and serve share are declared once
    for info in app.registered_commands:
        assert info.callback is not None
        name = info.name or info.callback.__name__.replace("_", "-")
        info.help = escape(unwrap(inspect.getdoc(info.callback) or ""))
        info.epilog = examples_block(EXAMPLES[name])
        for param in _parameter_infos(info.callback):
            if param.help and id(param) not in escaped:
                param.help = escape(param.help)
                escaped.add(id(param))
