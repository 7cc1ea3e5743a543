"""Column-mapped rows -> `TaskRecord`: the layouts of verl, EasyR1 and OraRL-Data.

These trainers keep one row per prompt with a prompt column, an answer column and media
lists (`videos`, `images`). `data.columns.<field>=<column>` names the column of each field
(a dotted name reaches into a nested column, e.g. `reward_model.ground_truth`); a preset
(`data.format=verl|easyr1|orarl`) fills the usual names:

| preset | prompt | answer | videos / images | family from |
|--------|--------|--------|-----------------|-------------|
| easyr1 | `problem` (or `prompt`) text with `<video>`/`<image>` | `answer` | `videos` / `images` | `problem_type` |
| verl   | `prompt` chat messages | `reward_model.ground_truth` | `videos` / `images` | `problem_type`, `ability` |
| orarl  | `problem` | `answer` | `videos` / `images` | `problem_type` |

Media are never dropped: a row with a video or image becomes a video family (from
`data.family` or the row's problem-type column) or fails with one line naming the column;
a row without media is text math. One video or image per row (our prompts hold one).
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

from videorl.data.families import SI_CHOICE_SUBTYPES, SI_NUMERIC_SUBTYPES, Family, parse_family
from videorl.data.formats import _choice_letter, _options, _windows, final_answer
from videorl.data.records import (
    ChoiceAnswer,
    MathAnswer,
    NumericAnswer,
    TaskRecord,
    TemporalAnswer,
    answer_from_dict,
)
from videorl.errors import ConfigError, DataError
from videorl.video.media import MediaRef

COLUMN_FORMATS = ("columns", "easyr1", "verl", "orarl")
_PLACEHOLDER = re.compile(r"<\s*(?:video|image)\s*>", re.IGNORECASE)
_SPAN = re.compile(r"([-+]?\d*\.?\d+)\s*(?:s\b|seconds?\b)?\s*(?:to|and|-|–)\s*([-+]?\d*\.?\d+)")
_MEDIA_KEYS = ("path", "video", "image", "video_path", "image_path", "file_name", "url")
_SI_SUBTYPES = SI_NUMERIC_SUBTYPES + SI_CHOICE_SUBTYPES


@dataclass(frozen=True)
class ColumnsConfig:
    """Which column holds each field (`data.columns.*`); unset fields use the preset's names.

    A dotted name reads a nested field (`reward_model.ground_truth`, `extra_info.index`).
    """

    prompt: str | None = None
    answer: str | None = None
    videos: str | None = None
    images: str | None = None
    problem_type: str | None = None
    options: str | None = None
    id: str | None = None
    duration: str | None = None
    source: str | None = None

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

    def override(self, columns: ColumnsConfig) -> ColumnMap:
        """The user's `data.columns.*` replace the preset's candidates for those fields."""
        changes = {
            f.name: (getattr(columns, f.name),)
            for f in fields(columns)
            if getattr(columns, f.name) is not None
        }
        return replace(self, **changes)


PRESETS: dict[str, ColumnMap] = {
    "columns": ColumnMap(),
    "easyr1": ColumnMap(prompt=("problem", "prompt")),
    "verl": ColumnMap(
        prompt=("prompt",),
        answer=("reward_model.ground_truth", "answer"),
        problem_type=("problem_type", "extra_info.problem_type", "ability"),
    ),
    "orarl": ColumnMap(prompt=("problem", "question", "prompt")),
}


def looks_like_columns(row: dict[str, Any]) -> bool:
    """A verl/EasyR1/OraRL row: media lists or a verl reward_model column."""
    return any(key in row for key in ("videos", "images", "reward_model"))


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


def _prompt_text(value: Any, column: str) -> str:
    """Text, or chat messages (verl) whose user turns may be lists of typed parts."""
    if isinstance(value, (list, tuple)):
        turns = [m for m in value if isinstance(m, dict) and m.get("role", "user") == "user"]
        if not turns:
            raise DataError(f"column {column!r}: a chat prompt without a user message")
        value = "\n".join(_content_text(m.get("content")) for m in turns)
    text = _PLACEHOLDER.sub(" ", str(value))  # our prompt template places the media itself
    return re.sub(r"[ \t]+", " ", text).strip()


def _content_text(content: Any) -> str:
    if isinstance(content, (list, tuple)):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


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
    return column, _media_entry(items[0], column, kind)


def resolve_row_family(value: Any, column: str) -> tuple[Family, str | None]:
    """A problem-type value -> family (and subtype for spatial-intelligence task names)."""
    text = str(value).strip().lower().replace("-", "_").replace(" ", "_")
    if text in _SI_SUBTYPES or text.startswith(("object_", "obj_", "room_")):
        subtype = text.removeprefix("object_").removeprefix("obj_")
        return Family.SPATIAL_INTELLIGENCE, subtype if subtype in _SI_SUBTYPES else text
    try:
        return parse_family(text), None
    except ConfigError as err:
        raise DataError(f"column {column!r}: {err}") from None


def parse_answer(family: Family, raw: Any, options: tuple[str, ...], column: str) -> Any:
    """The typed answer of `family` from an answer cell (value, JSON text or object)."""
    if isinstance(raw, str) and raw.strip()[:1] in ("{", "[") and family is not Family.MATH:
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError:
            pass
    where = f"column {column!r}"
    if isinstance(raw, dict):
        if family is Family.TEMPORAL_GROUNDING and "windows" not in raw:
            span = raw.get("time") or [raw.get("start"), raw.get("end")]
            return TemporalAnswer(tuple(_windows(span, column)))
        return answer_from_dict(family, raw, where)
    if family is Family.TEMPORAL_GROUNDING:
        if isinstance(raw, str):
            match = _SPAN.search(raw)
            if match is None:
                raise DataError(f"{where}: expected a span 'S to E' or [S, E], got {raw!r}")
            raw = [match.group(1), match.group(2)]
        return TemporalAnswer(tuple(_windows(raw, column)))
    if family is Family.SPATIAL_GROUNDING and isinstance(raw, (list, tuple)):
        return answer_from_dict(family, {"box": list(raw)}, where)
    if family is Family.MATH:
        text = str(raw[0] if isinstance(raw, (list, tuple)) and raw else raw)
        return MathAnswer(final_answer(text))
    if family is Family.SPATIAL_INTELLIGENCE and not options:
        try:
            return NumericAnswer(float(raw))
        except (TypeError, ValueError):
            pass
    if family in (Family.VIDEO_QA, Family.SPATIAL_INTELLIGENCE):
        letters = options or tuple("ABCDEFGH")
        return ChoiceAnswer(_choice_letter(raw.strip() if isinstance(raw, str) else raw, letters))
    raise DataError(
        f"{where}: {family.value} answers are objects (e.g. {{'boxes': ...}}), got {raw!r}"
    )


def _family(
    row: dict[str, Any], columns: ColumnMap, fixed: Family | None, media_column: str | None
) -> tuple[Family, str | None]:
    if fixed is not None:
        family, subtype = fixed, None
    else:
        column, value = _first(row, columns.problem_type)
        if value is not None:
            family, subtype = resolve_row_family(value, column)
        elif media_column is not None:
            raise DataError(
                f"column {media_column!r} holds media but the row names no task family; set "
                "data.family=NAME or data.columns.problem_type=COLUMN (e.g. temporal_grounding)"
            )
        else:
            family, subtype = Family.MATH, None
    if family is Family.MATH and media_column is not None:
        raise DataError(
            f"column {media_column!r} holds media but the row's family is math (text only); "
            "set data.family or data.columns.problem_type to its video family"
        )
    if family.uses_video and media_column is None:
        raise DataError(
            f"family {family.value} needs a video or image, but the columns "
            f"{', '.join(columns.videos + columns.images)} are empty; set data.columns.videos"
        )
    return family, subtype


def from_columns(
    row: dict[str, Any], default_id: str, family: Family | None, columns: ColumnMap
) -> TaskRecord:
    """One verl/EasyR1/OraRL-style row -> a validated record (errors name the column)."""
    video_column, video = _media(row, columns.videos, "video")
    image_column, image = _media(row, columns.images, "image")
    if video is not None and image is not None:
        raise DataError(
            f"columns {video_column!r} and {image_column!r} both hold media; keep one per row"
        )
    resolved, subtype = _family(row, columns, family, video_column or image_column)
    prompt_column, prompt = _first(row, columns.prompt)
    if prompt is None:
        raise DataError(f"missing prompt column {' or '.join(map(repr, columns.prompt))}")
    answer_column, raw_answer = _first(row, columns.answer)
    if raw_answer is None:
        raise DataError(f"missing answer column {' or '.join(map(repr, columns.answer))}")
    raw_options = _first(row, columns.options)[1]
    options = _options(raw_options) if raw_options is not None else ()
    problem = _prompt_text(prompt, prompt_column)
    if not problem:
        raise DataError(f"column {prompt_column!r}: the prompt is empty")
    duration = _first(row, columns.duration)[1]
    return TaskRecord(
        id=str(_first(row, columns.id)[1] or default_id),
        family=resolved,
        problem=problem,
        answer=parse_answer(resolved, raw_answer, options, answer_column),
        video=video,
        image=image,
        duration=None if duration is None else float(duration),
        subtype=subtype,
        source=None if (src := _first(row, columns.source)[1]) is None else str(src),
        options=options,
    )


def column_converter(
    format: str, columns: ColumnsConfig | None
) -> Callable[[dict[str, Any], str, Family | None], TaskRecord]:
    """The row converter of a column format, with the user's column names applied."""
    mapping = PRESETS[format].override(columns or ColumnsConfig())
    return lambda row, default_id, family: from_columns(row, default_id, family, mapping)
