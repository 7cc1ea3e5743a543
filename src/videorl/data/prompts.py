"""videorl's prompt template per family (each family's module names its own), stating the answer format of docs/methods.md#rewards.

`build_prompt(record, think=...)` returns the user text that goes with the record's video
or image. It always ends with the answer protocol: with `think=True` a `<think>` block then
exactly one `<answer>`; with `think=False` only the `<answer>`. Box coordinates are
described in the record's `box_format`: pixels of its `width x height` frame (`abs`) or
0..1000 on both axes (`norm1000`).
"""

from __future__ import annotations

import itertools
from typing import Literal, get_args

from videorl.data.published_prompts import boxed_instruction, published_prompt
from videorl.data.records import (
    LETTERS,
    NumericAnswer,
    SpatioTemporalAnswer,
    TaskRecord,
    TextAnswer,
    TrackingAnswer,
)
from videorl.errors import ConfigError

THINK = (
    "First think step by step inside <think> </think> tags, then give the final answer "
    "inside <answer> </answer> tags, with nothing after it."
)
NO_THINK = "Do not explain. Reply with only the final answer inside <answer> </answer> tags."
BOX = "[x1, y1, x2, y2]"


def _num(value: float) -> str:
    """`8.0` -> `8`, `6.5` -> `6.5` (short, exact for the 0.5 s grid)."""
    return f"{float(value):g}"


def _coordinates(record: TaskRecord, medium: str) -> str:
    if record.box_format == "norm1000":
        return "Coordinates are normalized to 0-1000 on both axes (x to the right, y down)."
    if record.width and record.height:
        return (
            f"Coordinates are pixels of the {record.width} x {record.height} {medium} "
            "(x to the right, y down)."
        )
    return f"Coordinates are pixels of the {medium} (x to the right, y down)."


def _options(record: TaskRecord) -> str:
    lines = [f"{letter}. {text}" for letter, text in zip(LETTERS, record.options, strict=False)]
    letters = ", ".join(LETTERS[: len(record.options)])
    return (
        "Options:\n"
        + "\n".join(lines)
        + f"\nAnswer with the letter of the correct option ({letters}) as <answer>X</answer>."
    )


def _duration(record: TaskRecord) -> str:
    return f"The video lasts {_num(record.duration)} seconds. " if record.duration else ""


def temporal(record: TaskRecord) -> str:
    return (
        f"{_duration(record)}Find the start and end of the moment described by: "
        f'"{record.problem}". Answer with the start and end time in seconds as '
        "<answer>S to E</answer>, for example <answer>2.5 to 7</answer>."
    )


def spatial(record: TaskRecord) -> str:
    medium = "image" if record.video is None else "video frame"
    return (
        f"Locate {record.problem} in the {medium}. Answer with its bounding box as "
        f"<answer>{BOX}</answer>. {_coordinates(record, medium)}"
    )


def segmentation(record: TaskRecord) -> str:
    is_video = record.video is not None
    medium = "video frame" if is_video else "image"
    time_field = ', "time": t' if is_video else ""
    time_text = (
        " and t, a time in seconds at which it is visible (the box and points are for that moment)"
        if is_video
        else ""
    )
    return (
        f"Segment {record.problem} in the {'video' if is_video else 'image'}. Answer with JSON "
        f'<answer>{{"boxes": {BOX}, "positive_points": [[x, y], [x, y], [x, y]], '
        f'"negative_points": [[x, y], [x, y], [x, y]]{time_field}}}</answer>: its bounding '
        "box, three points on it, three points near it but outside it"
        f"{time_text}. {_coordinates(record, medium)}"
    )


def tracking(record: TaskRecord) -> str:
    assert isinstance(record.answer, TrackingAnswer)
    frames = sorted(record.answer.boxes, key=float)
    fps = record.extra.get("source_fps")
    listed = ", ".join(f"{f} ({_num(float(f) / fps)} s)" if fps else f for f in frames)
    timing = (
        f"The video has {_num(fps)} frames per second; frame k is at k / {_num(fps)} s. "
        if fps
        else ""
    )
    first = record.extra.get("first_box")
    start = f"In frame 0 it is at [{', '.join(_num(v) for v in first)}]. " if first else ""
    return (
        f"Track {record.problem} through the video. {start}{timing}Give its box in frames "
        f'{listed} as JSON <answer>{{"boxes": {{"<frame>": {BOX}, ...}}}}</answer>. '
        f"{_coordinates(record, 'video frame')}"
    )


def _grid_step(record: TaskRecord) -> float:
    """Spacing of the ground-truth box keys (1 s when there is at most one key)."""
    assert isinstance(record.answer, SpatioTemporalAnswer)
    keys = sorted({float(k) for k in record.answer.boxes})
    steps = [b - a for a, b in itertools.pairwise(keys) if b > a]
    return min(steps) if steps else 1.0


def spatio_temporal(record: TaskRecord) -> str:
    step = _grid_step(record)
    grid = ", ".join(_num(k * step) for k in range(3))
    return (
        f"{_duration(record)}Find when and where {record.problem} appears. Answer with JSON "
        f'<answer>{{"time": [t0, t1], "boxes": {{"<second>": {BOX}, ...}}}}</answer>: the '
        f"start and end time in seconds, and its box at every time on the {_num(step)} s grid "
        f"({grid}, ...) between t0 and t1, keyed by that time. "
        f"{_coordinates(record, 'video frame')}"
    )


def choice_or_number(record: TaskRecord) -> str:
    if isinstance(record.answer, TextAnswer):
        return f"{record.problem}\nAnswer in a few words or a sentence."
    if isinstance(record.answer, NumericAnswer) or not record.options:
        return f"{record.problem}\nAnswer with a single number as <answer>N</answer>."
    return f"{record.problem}\n{_options(record)}"


def math(record: TaskRecord) -> str:
    return (
        f"{record.problem}\nGive the final answer in \\boxed{{}} inside the answer tags, "
        "as <answer>\\boxed{N}</answer>."
    )


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
