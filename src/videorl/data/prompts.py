"""The user text of a record: its family's task instruction (`TaskFamily.prompt`, in
`tasks/<family>/prompts.py`, which states the answer format of docs/methods.md#rewards),
then the answer protocol; and the sentences several templates share.

`build_prompt(record, think=...)` returns the user text that goes with the record's video
or image. It always ends with the answer protocol: with `think=True` a `<think>` block then
exactly one `<answer>`; with `think=False` only the `<answer>`. Box coordinates are
described in the record's `box_format`: pixels of its `width x height` frame (`abs`) or
0..1000 on both axes (`norm1000`).
"""

from __future__ import annotations

from typing import Literal, get_args

from videorl.data.published_prompts import boxed_instruction, published_prompt
from videorl.data.records import (
    LETTERS,
    TaskRecord,
)
from videorl.errors import ConfigError

THINK = (
    "First think step by step inside <think> </think> tags, then give the final answer "
    "inside <answer> </answer> tags, with nothing after it."
)
NO_THINK = "Do not explain. Reply with only the final answer inside <answer> </answer> tags."
BOX = "[x1, y1, x2, y2]"


def short_number(value: float) -> str:
    """`8.0` -> `8`, `6.5` -> `6.5` (short, exact for the 0.5 s grid)."""
    return f"{float(value):g}"


def coordinates_sentence(record: TaskRecord, medium: str) -> str:
    if record.box_format == "norm1000":
        return "Coordinates are normalized to 0-1000 on both axes (x to the right, y down)."
    if record.width and record.height:
        return (
            f"Coordinates are pixels of the {record.width} x {record.height} {medium} "
            "(x to the right, y down)."
        )
    return f"Coordinates are pixels of the {medium} (x to the right, y down)."


def options_block(record: TaskRecord) -> str:
    lines = [f"{letter}. {text}" for letter, text in zip(LETTERS, record.options, strict=False)]
    letters = ", ".join(LETTERS[: len(record.options)])
    return (
        "Options:\n"
        + "\n".join(lines)
        + f"\nAnswer with the letter of the correct option ({letters}) as <answer>X</answer>."
    )


def duration_sentence(record: TaskRecord) -> str:
    return f"The video lasts {short_number(record.duration)} seconds. " if record.duration else ""


PromptStyle = Literal["videorl", "orarl", "taro", "video_r1", "videoauto_r1"]
PROMPT_STYLES: tuple[str, ...] = get_args(PromptStyle)


def check_prompt_style(style: str, key: str = "data.prompt_style") -> str:
    """`style` if it is a known prompt style, else a one-line `ConfigError` naming `key`."""
    if style not in PROMPT_STYLES:
        raise ConfigError(
            f"{key}={style!r} is not a prompt style; use one of {', '.join(PROMPT_STYLES)}"
        )
    return style


def build_prompt(record: TaskRecord, *, think: bool, style: str = "videorl") -> str:
    """The user text for `record`: its family's task instruction and answer format, then
    the answer protocol (`<think>` + `<answer>` or `<answer>` only).

    `style` `orarl` / `taro` / `video_r1` use the published templates (`published_prompts`)
    where they have one for the family: OraRL's ask for the answer alone (a `<think>`
    instruction is appended only with `think`), TaRO's and Video-R1's ask for reasoning
    themselves. Other families keep videorl's template. `videoauto_r1` gives the family's task
    text with its answer in `\\boxed{}` and no protocol line: its system turn
    (`published_prompts.VIDEOAUTO_SYSTEM`) asks for `\\boxed{a1}<think>..</think>\\boxed{a2}`.

    A record that carries its own prompt (`record.prompt`: a verl row's chat, an EasyR1
    row's problem in its format prompt, a TaRO row) gets it verbatim, placeholder included
    (`models.inputs.chat_messages` puts the media there); a record whose row names its
    ecosystem's style (`record.prompt_style`, OraRL-Data) gets that style instead of
    `style`."""
    if record.prompt is not None:
        return record.prompt
    if record.prompt_style is not None:
        style = check_prompt_style(record.prompt_style, key=f"record {record.id} prompt_style")
    if check_prompt_style(style) == "videoauto_r1":  # the system turn asks for both answers
        return boxed_instruction(record.family.task.prompt(record))
    published = None if style == "videorl" else published_prompt(record, style)
    if published is None:
        return f"{record.family.task.prompt(record)}\n{THINK if think else NO_THINK}"
    if style == "orarl" and think:
        return f"{published}\n{THINK}"
    return published
