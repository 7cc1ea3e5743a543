"""Column-mapped rows -> `TaskRecord`: the layouts of verl, EasyR1 and OraRL-Data.

These trainers keep one row per prompt with a prompt column, an answer column and media
lists (`videos`, `images`). `data.columns.<field>=<column>` names the column of each field
(a dotted name reaches into a nested column, e.g. `reward_model.ground_truth`); a preset
(`data.format=verl|easyr1|orarl`) fills the usual names and builds the prompt the way that
trainer does:

| preset | prompt | answer | videos / images | family from | the prompt the model sees |
|--------|--------|--------|-----------------|-------------|---------------------------|
| easyr1 | `problem` (or `prompt`) text with `<video>`/`<image>` | `answer` | `videos` / `images` | `problem_type` | `problem` in EasyR1's format prompt (`data.format_prompt`) |
| verl   | `prompt` chat messages | `reward_model.ground_truth` | `videos` / `images` | `problem_type`, `ability` | the chat's user turn as given (system turn too) |
| orarl  | `problem` | `answer` | `videos` / `images` | `problem_type` | OraRL's task template around `problem` (`prompt_style: orarl`) |
| columns | `prompt`, `problem` or `question` | `answer`, ... | `videos` / `images` | `problem_type` | the run's `data.prompt_style` around the text |

In every layout a prompt that is a chat transcript, or that already is a published
temporal-grounding instruction (TaRO's `data/test.json` rows, OraRL's template), is used as
given rather than wrapped in a second instruction; the query inside it becomes the record's
`problem`. A `<video>` / `<image>` placeholder stays where the row puts it: the model's vision
input goes there (`models.inputs.chat_messages`). TaRO's training rows add `query`,
`captions` (formatted caption lines, joined verbatim by its constructed reasoning) and
`video_start` / `video_end` (a clip; its ground truth and duration are the clip's).

Media are never dropped: a row with a video or image becomes a video family (from
`data.family` or the row's problem-type column) or fails with one line naming the column;
a row without media is text math. One video or image per row (our prompts hold one).
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any, cast

from videorl.data.families import SI_CHOICE_SUBTYPES, SI_NUMERIC_SUBTYPES, Family, parse_family
from videorl.data.formats import _options
from videorl.data.published_prompts import (
    easyr1_format_prompt,
    load_format_prompt,
    query_from_instruction,
)
from videorl.data.records import (
    TaskRecord,
    answer_from_dict,
    caption_from_value,
    finite_number,
)
from videorl.errors import ConfigError, DataError, fix
from videorl.video.media import MediaRef

COLUMN_FORMATS = ("columns", "easyr1", "verl", "orarl")
_PLACEHOLDER = re.compile(r"<\s*(?:video|image)\s*>", re.IGNORECASE)
# The placeholders verl, EasyR1 and TaRO split a prompt at (exact strings, as they do).
PLACEHOLDERS = {"video": "<video>", "image": "<image>"}
_MEDIA_KEYS = ("path", "video", "image", "video_path", "image_path", "file_name", "url")
_SI_SUBTYPES = SI_NUMERIC_SUBTYPES + SI_CHOICE_SUBTYPES


@dataclass(frozen=True)
class ColumnsConfig:
    """Which column holds each field (`data.columns.*`); unset fields use the preset's names.

    A dotted name reads a nested field (`reward_model.ground_truth`, `extra_info.index`).
    """

    prompt: str | None = None
    """Column of the prompt text or chat messages; null = the preset's name."""
    answer: str | None = None
    """Column of the ground-truth answer; null = the preset's name."""
    videos: str | None = None
    """Column of the video list (paths or objects); null = the preset's name."""
    images: str | None = None
    """Column of the image list; null = the preset's name."""
    problem_type: str | None = None
    """Column of the task family / problem type; null = the preset's name."""
    options: str | None = None
    """Column of the multiple-choice options; null = the preset's name."""
    id: str | None = None
    """Column of the row id; null = the preset's name."""
    duration: str | None = None
    """Column of the video duration in seconds; null = the preset's name."""
    source: str | None = None
    """Column of the source dataset name; null = the preset's name."""
    query: str | None = None
    """Column of the TaRO query (the event to ground); null = the preset's name."""
    captions: str | None = None
    """Column of the TaRO dense captions; null = the preset's name."""
    video_start: str | None = None
    """Column of the clip start time in seconds (TaRO); null = the preset's name."""
    video_end: str | None = None
    """Column of the clip end time in seconds (TaRO); null = the preset's name."""

    def any_set(self) -> bool:
        return any(getattr(self, f.name) is not None for f in fields(self))


@dataclass(frozen=True)
class ColumnMap:
    """Candidate column names per field, first present wins."""

    prompt: tuple[str, ...] = ("prompt", "problem", "question")
    answer: tuple[str, ...] = ("answer", "reward_model.ground_truth", "ground_truth", "solution")
    videos: tuple[str, ...] = ("videos", "video")
    images: tuple[str, ...] = ("images", "image")
    problem_type: tuple[str, ...] = ("problem_type",)
    options: tuple[str, ...] = ("options", "choices")
    id: tuple[str, ...] = ("id", "uid", "qid", "extra_info.index")
    duration: tuple[str, ...] = ("duration", "extra_info.duration")
    source: tuple[str, ...] = ("source", "data_source")
    query: tuple[str, ...] = ("query",)
    captions: tuple[str, ...] = ("captions",)
    video_start: tuple[str, ...] = ("video_start",)
    video_end: tuple[str, ...] = ("video_end",)
    # How the row's prompt reaches the model: `template` (the run's prompt style around the
    # text), `verbatim` (verl), `format_prompt` (EasyR1), `orarl` (OraRL's task templates).
    prompt_mode: str = "template"

    def override(self, columns: ColumnsConfig) -> ColumnMap:
        """The user's `data.columns.*` replace the preset's candidates for those fields."""
        changes: dict[str, Any] = {
            f.name: (getattr(columns, f.name),)
            for f in fields(columns)
            if getattr(columns, f.name) is not None
        }
        return replace(self, **changes)


PRESETS: dict[str, ColumnMap] = {
    "columns": ColumnMap(),
    "easyr1": ColumnMap(prompt=("problem", "prompt"), prompt_mode="format_prompt"),
    "verl": ColumnMap(
        prompt=("prompt",),
        answer=("reward_model.ground_truth", "answer"),
        problem_type=("problem_type", "extra_info.problem_type", "ability"),
        prompt_mode="verbatim",
    ),
    "orarl": ColumnMap(prompt=("problem", "question", "prompt"), prompt_mode="orarl"),
}


def _get(row: dict[str, Any], name: str) -> Any:
    value: Any = row
    for part in name.split("."):
        if not isinstance(value, dict) or value.get(part) is None:
            return None
        value = value[part]
    return value


def _first(row: dict[str, Any], names: Sequence[str]) -> tuple[str | None, Any]:
    for name in names:
        value = _get(row, name)
        if value is not None:
            return name, value
    return None, None


@dataclass(frozen=True)
class RowPrompt:
    """A row's prompt column read as given: the user text (placeholders kept), the system
    turn of a chat, and whether it was a chat transcript."""

    text: str
    system: str | None = None
    chat: bool = False


def _row_prompt(value: Any, column: str) -> RowPrompt:
    """Text, or chat messages (verl) whose turns may be lists of typed parts (a vision part
    becomes its placeholder)."""
    if not isinstance(value, (list, tuple)):
        return RowPrompt(str(value))
    messages = [m for m in value if isinstance(m, dict)]
    roles = [str(m.get("role", "user")) for m in messages]
    if "user" not in roles:
        raise DataError(f"column {column!r}: a chat prompt without a user message")
    if "assistant" in roles:
        raise DataError(
            f"column {column!r}: the chat prompt has an assistant turn; videorl prompts are one "
            "user turn (and a system turn), so move worked examples into the user text"
        )
    system = [
        _content_text(m.get("content"))
        for m, r in zip(messages, roles, strict=True)
        if r == "system"
    ]
    user = [
        _content_text(m.get("content")) for m, r in zip(messages, roles, strict=True) if r == "user"
    ]
    return RowPrompt("\n".join(user), "\n".join(system) if system else None, chat=True)


def _content_text(content: Any) -> str:
    if isinstance(content, (list, tuple)):
        parts = []
        for part in content:
            if not isinstance(part, dict):
                continue
            kind = part.get("type")
            parts.append(PLACEHOLDERS[kind] if kind in PLACEHOLDERS else str(part.get("text", "")))
        return "".join(parts)
    return "" if content is None else str(content)


def _plain_text(text: str) -> str:
    """The text without its placeholders and runs of spaces (the record's `problem`)."""
    return re.sub(r"[ \t]+", " ", _PLACEHOLDER.sub(" ", text)).strip()


def check_placeholders(text: str, kind: str | None, column: str) -> str:
    """`text` if its vision placeholders fit the row's media (`kind`: video, image or None):
    at most one, of that kind; a one-line `DataError` otherwise."""
    for name, marker in PLACEHOLDERS.items():
        count = text.count(marker)
        if count and name != kind:
            has = f"its media is {'an ' if kind == 'image' else 'a '}{kind}" if kind else "no media"
            raise DataError(f"column {column!r}: the prompt has a {marker} placeholder but {has}")
        if count > 1:
            raise DataError(
                f"column {column!r}: the prompt has {count} {marker} placeholders; videorl "
                f"prompts hold one {name}"
            )
    return text


def _image_frames(data: bytes, column: str) -> Any:
    import numpy as np
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as image:
            return np.asarray(image.convert("RGB"))[None]
    except UnidentifiedImageError:
        raise DataError(f"column {column!r}: the image bytes are not an image") from None


def _media_entry(entry: Any, column: str, kind: str) -> MediaRef:
    """A path, `file://` URI, `{path|video|image: ...}` dict or (images) bytes / PIL image."""
    if isinstance(entry, dict):
        if entry.get("bytes") is not None and kind == "image":  # embedded (datasets Image)
            return MediaRef(frames=_image_frames(entry["bytes"], column))
        path = next((entry[k] for k in _MEDIA_KEYS if isinstance(entry.get(k), str)), None)
        if path is None:
            raise DataError(
                f"column {column!r}: a media entry needs a path (one of {', '.join(_MEDIA_KEYS)})"
                + (" or image bytes" if kind == "image" else "")
                + f", got keys {sorted(entry)}"
            )
        entry = path
    if hasattr(entry, "convert") and kind == "image":  # a decoded PIL image (datasets Image)
        import numpy as np

        return MediaRef(frames=np.asarray(entry.convert("RGB"))[None])
    if isinstance(entry, (list, tuple)):
        raise DataError(
            f"column {column!r}: a video given as a list of frame files is not supported; "
            "encode the frames into a video file (e.g. with ffmpeg) and give its path"
        )
    if not isinstance(entry, str) or not entry.strip():
        raise DataError(f"column {column!r}: expected a media path, got {entry!r}")
    path = entry.strip()
    if path.startswith("file://"):
        path = path[len("file://") :]
    elif re.match(r"^[a-z][a-z0-9+.-]*://", path):
        raise DataError(f"column {column!r}: remote media {path!r}; download it and give a path")
    return MediaRef(path=path)


def _media(row: dict[str, Any], names: Sequence[str], kind: str) -> tuple[str | None, Any]:
    column, value = _first(row, names)
    if value is None:
        return None, None
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    if not items:
        return None, None
    if len(items) > 1:
        raise DataError(
            f"column {column!r}: {len(items)} {kind}s in one row; videorl prompts hold one "
            f"{kind}, so split the row or keep one {kind}"
        )
    # _first names a column whenever it finds a value
    return column, _media_entry(items[0], cast(str, column), kind)


def resolve_row_family(value: Any, column: str) -> tuple[Family, str | None]:
    """A problem-type value -> family (and subtype for spatial-intelligence task names)."""
    text = str(value).strip().lower().replace("-", "_").replace(" ", "_")
    if text in _SI_SUBTYPES or text.startswith(("object_", "obj_", "room_")):
        subtype = text.removeprefix("object_").removeprefix("obj_")
        return Family("spatial_intelligence"), subtype if subtype in _SI_SUBTYPES else text
    try:
        return parse_family(text), None
    except ConfigError as err:
        raise DataError(f"column {column!r}: {err}") from None


def json_cell(raw: Any) -> Any:
    """An answer cell that is JSON text (an object or a list) decoded; anything else as is."""
    if isinstance(raw, str) and raw.strip()[:1] in ("{", "["):
        with contextlib.suppress(json.JSONDecodeError):
            return json.loads(raw)
    return raw


def object_cell(family: Family, raw: Any, column: str) -> Any:
    """The answer of a family whose cells hold its JSON object (or that object as text)."""
    raw = json_cell(raw)
    if isinstance(raw, dict):
        return answer_from_dict(family, raw, f"column {column!r}")
    raise DataError(
        f"column {column!r}: {family.value} answers are objects (e.g. {{'boxes': ...}}), "
        f"got {raw!r}"
    )


def parse_answer(family: Family, raw: Any, options: tuple[str, ...], column: str) -> Any:
    """The typed answer of `family` from an answer cell (value, JSON text or object): the
    family's `cell_answer`, else its JSON object form."""
    read = family.task.cell_answer
    return object_cell(family, raw, column) if read is None else read(raw, options, column)


def _family(
    row: dict[str, Any], columns: ColumnMap, fixed: Family | None, media_column: str | None
) -> tuple[Family, str | None]:
    if fixed is not None:
        family, subtype = fixed, None
    else:
        column, value = _first(row, columns.problem_type)
        if value is not None:
            # _first names a column whenever it finds a value
            family, subtype = resolve_row_family(value, cast(str, column))
        elif media_column is not None:
            raise DataError(
                f"column {media_column!r} holds media but the row names no task family; "
                f"{fix('set data.family=NAME or data.columns.problem_type=COLUMN')} "
                "(e.g. temporal_grounding)"
            )
        else:
            family, subtype = Family("math"), None
    if not family.uses_video and media_column is not None:
        raise DataError(
            f"column {media_column!r} holds media but the row's family is {family.value} (text only); "
            f"{fix('set data.family or data.columns.problem_type')} to its video family"
        )
    if family.uses_video and media_column is None:
        raise DataError(
            f"family {family.value} needs a video or image, but the columns "
            f"{', '.join(columns.videos + columns.images)} are empty; "
            f"{fix('set data.columns.videos')}"
        )
    return family, subtype


def _prompt_fields(
    row: dict[str, Any],
    columns: ColumnMap,
    family: Family,
    kind: str | None,
    format_prompt: str | None,
) -> dict[str, Any]:
    """`problem`, `prompt`, `system` and `prompt_style` of the record, the way the row's
    trainer builds its prompt (the table in the module docstring)."""
    column, value = _first(row, columns.prompt)
    if value is None:
        raise DataError(f"missing prompt column {' or '.join(map(repr, columns.prompt))}")
    column = cast(str, column)  # _first names a column whenever it finds a value
    given = _row_prompt(value, column)
    text = check_placeholders(given.text, kind, column)
    query = _first(row, columns.query)[1]
    instruction = query_from_instruction(text) if family.task.time_windows else None
    problem = _plain_text(str(query)) if query is not None else instruction or _plain_text(text)
    if not problem:
        raise DataError(f"column {column!r}: the prompt is empty")
    fields: dict[str, Any] = {"problem": problem, "system": given.system}
    mode = columns.prompt_mode
    if mode == "format_prompt":
        fields["prompt"] = check_placeholders(
            easyr1_format_prompt(format_prompt, text, family), kind, "data.format_prompt"
        )
    elif mode == "verbatim" or given.chat or instruction is not None:
        fields["prompt"] = text  # a full prompt: never wrapped in a second instruction
    elif mode == "orarl":
        fields["prompt_style"] = "orarl"
    return fields


def _clip(row: dict[str, Any], columns: ColumnMap, video: MediaRef | None) -> MediaRef | None:
    """The video with the row's `video_start` / `video_end` clip (TaRO's rows: seconds of the
    source; the frames' times, ground truth and duration are the clip's)."""
    start_column, start = _first(row, columns.video_start)
    end_column, end = _first(row, columns.video_end)
    if video is None or (start is None and end is None):
        return video
    start = None if start is None else finite_number(start, f"column {start_column!r}")
    end = None if end is None else finite_number(end, f"column {end_column!r}")
    if start is not None and end is not None and end <= start:
        raise DataError(f"column {end_column!r}: clip [{start}, {end}] is empty")
    return replace(video, start=start, end=end)


def _captions(row: dict[str, Any], columns: ColumnMap) -> tuple[Any, ...]:
    column, value = _first(row, columns.captions)
    if value is None:
        return ()
    if not isinstance(value, (list, tuple)):
        raise DataError(f"column {column!r}: expected a list of captions, got {value!r}")
    return tuple(caption_from_value(c, f"column {column!r}") for c in value)


# `extra_info` fields a reward reads, kept in the record's `extra` under the same name:
# LongVT's evidence window (the IoU term) and bare question (what its LLM judge is shown).
KEPT_EXTRA_INFO = ("video_segment", "question")


def _kept_extra(row: dict[str, Any]) -> dict[str, Any]:
    info = row.get("extra_info")
    if not isinstance(info, dict):
        return {}
    return {name: info[name] for name in KEPT_EXTRA_INFO if info.get(name) is not None}


def from_columns(
    row: dict[str, Any],
    default_id: str,
    family: Family | None,
    columns: ColumnMap,
    format_prompt: str | None = None,
) -> TaskRecord:
    """One verl/EasyR1/OraRL-style row -> a validated record (errors name the column)."""
    video_column, video = _media(row, columns.videos, "video")
    image_column, image = _media(row, columns.images, "image")
    if video is not None and image is not None:
        raise DataError(
            f"columns {video_column!r} and {image_column!r} both hold media; keep one per row"
        )
    resolved, subtype = _family(row, columns, family, video_column or image_column)
    kind = "video" if video is not None else "image" if image is not None else None
    prompt = _prompt_fields(row, columns, resolved, kind, format_prompt)
    answer_column, raw_answer = _first(row, columns.answer)
    if raw_answer is None:
        raise DataError(f"missing answer column {' or '.join(map(repr, columns.answer))}")
    raw_options = _first(row, columns.options)[1]
    options = _options(raw_options) if raw_options is not None else ()
    duration = _first(row, columns.duration)[1]
    row_id = _first(row, columns.id)[1]  # verl's extra_info.index starts at 0
    task = _first(row, columns.problem_type)[1]  # as written: data.sampler=orarl groups by it
    extra = {"problem_type": task} if isinstance(task, str) and task.strip() else {}
    extra.update(_kept_extra(row))
    return TaskRecord(
        id=default_id if row_id is None or row_id == "" else str(row_id),
        family=resolved,
        # _first names a column whenever it finds a value
        answer=parse_answer(resolved, raw_answer, options, cast(str, answer_column)),
        video=_clip(row, columns, video),
        image=image,
        duration=None if duration is None else float(duration),
        captions=_captions(row, columns),
        subtype=subtype,
        source=None if (src := _first(row, columns.source)[1]) is None else str(src),
        options=options,
        extra=extra,
        **prompt,
    )


def column_converter(
    format: str, columns: ColumnsConfig | None, format_prompt: str = "auto"
) -> Callable[[dict[str, Any], str, Family | None], TaskRecord]:
    """The row converter of a column format, with the user's column names applied;
    `format_prompt` is EasyR1's (`data.format_prompt`: auto, math, r1v, none or a .jinja
    file), read once here."""
    mapping = PRESETS[format].override(columns or ColumnsConfig())
    template = load_format_prompt(format_prompt) if mapping.prompt_mode == "format_prompt" else None
    return lambda row, default_id, family: from_columns(row, default_id, family, mapping, template)
