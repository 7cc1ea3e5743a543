"""Row converters: one public annotation format -> `TaskRecord`.

Each converter takes one row (a dict from a JSONL line or a Parquet row) and returns a
validated record, or raises `DataError` naming the field at fault; `loaders.py` adds the
file and line. Media paths are returned as written; the loader resolves them.

Formats:
- `records`: videorl's own JSON form (`TaskRecord.to_dict`); in Parquet, nested fields
  may be JSON text (what `write_records` writes).
- `vtg`: `{qid, query, duration, vid, relevant_windows, video_file, video_start, video_end}`
  (Charades-STA, ActivityNet Captions, QVHighlights, TVGBench). Windows are seconds of the
  source video; with a clip (`video_start`/`video_end`) they are shifted into the clip's
  time axis (the axis the model sees), clipped to it, and the offset kept in `extra`.
- `timer1`: `{video, duration, timestamp, sentence}` (Time-R1-style training data).
- `mcq`: `{question, options, answer}` with a `video`/`video_path`/`image` path; the answer
  is a letter, the option text, or a 0-based index; VSI-Bench-style numeric questions
  (no options, `ground_truth` a number) become numeric spatial intelligence.
- `math`: `{prompt|problem|question, answer|solution|reward_model.ground_truth}`; a chat
  prompt (list of messages) keeps its user text; `\\boxed{...}` and GSM8K `#### x` answers
  are reduced to the final answer.
- `video_r1`: Video-R1-260k / Video-R1-COT rows `{problem_id, problem, data_type, problem_type,
  options, solution: "<answer>X</answer>", path}` (tulerfeng/Video-R1
  `src/r1-v/src/open_r1/grpo.py`): `multiple choice` -> video QA (image or video),
  `numerical` / `regression` -> numeric spatial intelligence (scored by MRA, where Video-R1
  scores numerical exactly to 2 decimals and regression by 1 - relative error); `OCR` and
  `free-form` have no family here (an invalid row: `data.skip_invalid=true` skips them).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from videorl.data.families import Family, families, parse_family
from videorl.data.records import (
    LETTERS,
    ChoiceAnswer,
    MathAnswer,
    NumericAnswer,
    TaskRecord,
    TemporalAnswer,
    finite_number,
    record_from_dict,
)
from videorl.errors import DataError
from videorl.video.media import MediaRef

FORMATS = ("records", "vtg", "timer1", "mcq", "math", "video_r1")

_OPTION_PREFIX = re.compile(r"^\s*\(?([A-H])\s*[.):]\s*")
# "B", "(B)", "B.", "B)", "B. option text"
_ANSWER_LETTER = re.compile(r"\(?([A-H])\)?(?:[.:)].*)?", re.DOTALL)


def _field(row: dict[str, Any], *names: str) -> Any:
    """The first present, non-null field of `names`; a DataError naming them if none."""
    for name in names:
        if row.get(name) is not None:
            return row[name]
    raise DataError(f"missing field {' or '.join(repr(n) for n in names)}")


def _number(value: Any, name: str) -> float:
    return finite_number(value, f"field {name!r}")


def windows_of(value: Any, name: str) -> list[tuple[float, float]]:
    """`[s, e]` or `[[s, e], ...]` -> list of windows with s <= e."""
    if (
        isinstance(value, (list, tuple))
        and len(value) == 2
        and not isinstance(value[0], (list, tuple))
    ):
        value = [value]
    if not isinstance(value, (list, tuple)) or not value:
        raise DataError(f"field {name!r}: expected [start, end] or a list of them, got {value!r}")
    windows = []
    for window in value:
        if not isinstance(window, (list, tuple)) or len(window) != 2:
            raise DataError(f"field {name!r}: expected [start, end], got {window!r}")
        start, end = _number(window[0], name), _number(window[1], name)
        if end < start:
            raise DataError(f"field {name!r}: window {list(window)} ends before it starts")
        windows.append((start, end))
    return windows


def _row_id(row: dict[str, Any], default: str) -> str:
    for name in ("id", "qid", "question_id", "uid"):
        if row.get(name) is not None:
            return str(row[name])
    return default


# ----- converters ---------------------------------------------------------------------------


_NESTED = ("answer", "video", "image", "captions", "options", "extra")


def _unpack_nested(row: dict[str, Any]) -> dict[str, Any]:
    """Nested fields stored as JSON text (Parquet columns of mixed shape) -> objects; null
    columns (a field other rows of the table have) are dropped."""
    out = {k: v for k, v in row.items() if v is not None}
    for name in _NESTED:
        value = out.get(name)
        if isinstance(value, str) and value[:1] in ("{", "["):
            try:
                out[name] = json.loads(value)
            except json.JSONDecodeError:
                raise DataError(f"field {name!r}: invalid JSON text {value[:80]!r}") from None
    return out


def from_records(row: dict[str, Any], default_id: str, family: Family | None) -> TaskRecord:
    row = _unpack_nested(row)
    if family is not None and "family" not in row:
        row = {**row, "family": family.value}
    if "id" not in row:
        row = {**row, "id": default_id}
    return record_from_dict(row)


def from_vtg(row: dict[str, Any], default_id: str, family: Family | None) -> TaskRecord:
    query = str(_field(row, "query")).strip()
    duration = _number(_field(row, "duration"), "duration")
    if duration <= 0:
        raise DataError(f"field 'duration': expected a positive number of seconds, got {duration}")
    windows = windows_of(_field(row, "relevant_windows"), "relevant_windows")
    if row.get("video_file") is not None:
        path = str(row["video_file"])
    else:
        path = f"{_field(row, 'vid', 'video_file')}.mp4"
    start = row.get("video_start")
    end = row.get("video_end")
    start = None if start is None else _number(start, "video_start")
    end = None if end is None else _number(end, "video_end")
    extra: dict[str, Any] = {"vid": row["vid"]} if row.get("vid") is not None else {}
    if start is not None or end is not None:
        offset = start or 0.0
        clip_end = min(end, duration) if end is not None else duration
        if clip_end <= offset:
            raise DataError(f"field 'video_end': clip [{start}, {end}] is empty")
        length = clip_end - offset
        shifted = [
            (min(max(s - offset, 0.0), length), min(max(e - offset, 0.0), length))
            for s, e in windows
        ]
        extra.update(video_start=offset, source_windows=[list(w) for w in windows])
        windows, duration = shifted, length
    return TaskRecord(
        id=_row_id(row, default_id),
        family=family or Family("temporal_grounding"),
        problem=query,
        answer=TemporalAnswer(tuple(windows)),
        video=MediaRef(path=path, start=start, end=end),
        duration=duration,
        source=row.get("source"),
        extra=extra,
    )


def from_timer1(row: dict[str, Any], default_id: str, family: Family | None) -> TaskRecord:
    duration = _number(_field(row, "duration"), "duration")
    if duration <= 0:
        raise DataError(f"field 'duration': expected a positive number of seconds, got {duration}")
    return TaskRecord(
        id=_row_id(row, default_id),
        family=family or Family("temporal_grounding"),
        problem=str(_field(row, "sentence")).strip(),
        answer=TemporalAnswer(tuple(windows_of(_field(row, "timestamp"), "timestamp"))),
        video=MediaRef(path=str(_field(row, "video"))),
        duration=duration,
        source=row.get("source"),
    )


def _options(value: Any) -> tuple[str, ...]:
    """List or `{letter: text}` -> option texts without their `A.` / `(A)` prefixes."""
    if isinstance(value, dict):
        value = [value[k] for k in sorted(value)]
    if not isinstance(value, (list, tuple)) or not 2 <= len(value) <= len(LETTERS):
        raise DataError(f"field 'options': expected 2 to 8 options, got {value!r}")
    texts = []
    for letter, option in zip(LETTERS, value, strict=False):
        text = str(option).strip()
        match = _OPTION_PREFIX.match(text)
        if match and match.group(1) == letter:
            text = text[match.end() :]
        texts.append(text)
    return tuple(texts)


def choice_letter(answer: Any, options: tuple[str, ...]) -> str:
    if isinstance(answer, int) and not isinstance(answer, bool):
        if 0 <= answer < len(options):
            return LETTERS[answer]
        raise DataError(f"field 'answer': index {answer} is outside the {len(options)} options")
    text = str(answer).strip()
    if text in options:
        return LETTERS[options.index(text)]
    match = _ANSWER_LETTER.fullmatch(text)
    if match and LETTERS.index(match.group(1)) < len(options):
        return match.group(1)
    raise DataError(f"field 'answer': {answer!r} is not an option letter, index or option text")


def from_mcq(row: dict[str, Any], default_id: str, family: Family | None) -> TaskRecord:
    answer_value = _field(row, "answer", "ground_truth")
    raw_options = row.get("options", row.get("choices"))
    if family is None:  # numeric questions without options are spatial intelligence
        family = Family("spatial_intelligence") if raw_options is None else Family("video_qa")
    options: tuple[str, ...] = ()
    if raw_options is None and family == Family("spatial_intelligence"):
        answer: Any = NumericAnswer(_number(answer_value, "answer"))
    else:
        options = _options(_field(row, "options", "choices"))
        answer = ChoiceAnswer(choice_letter(answer_value, options))
    video = next((row[k] for k in ("video", "video_path", "video_file") if row.get(k)), None)
    image = row.get("image") or row.get("image_path")
    if video is None and image is None:
        raise DataError("missing field 'video' or 'video_path' or 'image'")
    duration = row.get("duration")
    return TaskRecord(
        id=_row_id(row, default_id),
        family=family,
        problem=str(_field(row, "question")).strip(),
        answer=answer,
        video=None if video is None else MediaRef(path=str(video)),
        image=None if image is None or video is not None else MediaRef(path=str(image)),
        duration=None if duration is None else _number(duration, "duration"),
        subtype=next(
            (
                str(row[k])
                for k in ("question_type", "task_type", "type", "subtype")
                if row.get(k) is not None
            ),
            None,
        ),
        source=row.get("source") or row.get("dataset"),
        options=options,
    )


def _chat_text(prompt: Any) -> str:
    if isinstance(prompt, (list, tuple)):
        texts = [
            str(m.get("content", ""))
            for m in prompt
            if isinstance(m, dict) and m.get("role", "user") == "user"
        ]
        if not texts:
            raise DataError("field 'prompt': a chat prompt without a user message")
        return "\n".join(texts)
    return str(prompt)


def last_boxed(text: str) -> str | None:
    """Content of the last `\\boxed{...}` (nested braces balanced), else None."""
    start = text.rfind("\\boxed{")
    if start < 0:
        return None
    depth, begin = 0, start + len("\\boxed{")
    for i in range(begin - 1, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[begin:i]
    return None


def final_answer(text: str) -> str:
    """`\\boxed{x}` -> x; GSM8K `... #### x` -> x; otherwise the text itself."""
    boxed = last_boxed(text)
    if boxed is not None:
        return boxed.strip()
    if "####" in text:
        return text.rsplit("####", 1)[1].strip()
    return text.strip()


def from_math(row: dict[str, Any], default_id: str, family: Family | None) -> TaskRecord:
    problem = _chat_text(_field(row, "prompt", "problem", "question")).strip()
    reward_model = row.get("reward_model")
    if isinstance(reward_model, dict) and reward_model.get("ground_truth") is not None:
        raw = reward_model["ground_truth"]
    else:
        raw = _field(row, "answer", "solution", "ground_truth")
    answer = final_answer(str(raw))
    if not problem or not answer:
        raise DataError("field 'answer': the problem or its final answer is empty")
    return TaskRecord(
        id=_row_id(row, default_id),
        family=family or Family("math"),
        problem=problem,
        answer=MathAnswer(answer),
        source=row.get("data_source") or row.get("source"),
    )


VIDEO_R1_SOLUTION = "video_r1_solution"  # rewards/video_r1.py: SOLUTION_KEY
_VIDEO_R1_ANSWER = re.compile(r"<answer>\s*(.*?)\s*</answer>", re.DOTALL)


def video_r1_types() -> dict[str, Family]:
    """Video-R1 `problem_type` -> the family that declares it (`TaskFamily.video_r1_types`)."""
    return {kind: f for f in families() for kind in f.task.video_r1_types}


def from_video_r1(row: dict[str, Any], default_id: str, family: Family | None) -> TaskRecord:
    """A Video-R1 row; the answer is the `solution`'s `<answer>` text (Video-R1's
    `extract_answer`), the media `path` an image or a video by `data_type`."""
    problem_type = str(_field(row, "problem_type")).strip()
    known = video_r1_types()
    resolved = family or known.get(problem_type)
    if resolved is None:
        raise DataError(
            f"field 'problem_type': {problem_type!r} has no videorl family (known: "
            f"{', '.join(known)})"
        )
    solution = str(_field(row, "solution"))
    match = _VIDEO_R1_ANSWER.search(solution)
    value = match.group(1) if match else solution.strip()
    options: tuple[str, ...] = ()
    if problem_type == "multiple choice":
        options = _options(_field(row, "options"))
        answer: Any = ChoiceAnswer(choice_letter(value, options))
    else:
        answer = NumericAnswer(_number(value.replace(",", ""), "solution"))
    data_type = str(_field(row, "data_type")).strip()
    if data_type not in ("image", "video"):
        raise DataError(f"field 'data_type': expected image or video, got {data_type!r}")
    media = MediaRef(path=str(_field(row, "path")))
    return TaskRecord(
        id=str(row.get("problem_id", default_id)),
        family=resolved,
        problem=str(_field(row, "problem")).strip(),
        answer=answer,
        video=media if data_type == "video" else None,
        image=media if data_type == "image" else None,
        subtype=problem_type if resolved.task.subtype_groups else None,
        source=row.get("data_source"),
        options=options,
        extra={VIDEO_R1_SOLUTION: solution},  # reward.mode: video_r1 reads it as Video-R1 does
    )


CONVERTERS: dict[str, Callable[[dict[str, Any], str, Family | None], TaskRecord]] = {
    "records": from_records,
    "vtg": from_vtg,
    "timer1": from_timer1,
    "mcq": from_mcq,
    "math": from_math,
    "video_r1": from_video_r1,
}


# OraRL-Data's canonical fields (OraRL `orarl/data/schema.py: CANONICAL_FIELDS`).
ORARL_FIELDS = frozenset({"problem", "answer", "images", "videos", "problem_type", "source"})
# Fields that hold a row's media in the layouts below: a row with one is never text math.
MEDIA_FIELDS = frozenset({"videos", "images", "video", "image", "video_path", "image_path"})


def column_layout(row: dict[str, Any]) -> str | None:
    """The trainer whose column layout `row` has (`data/columns.py`): `verl` (a
    `reward_model` column: verl and TaRO), `orarl` (all of OraRL-Data's canonical fields),
    `easyr1` (a `problem` with `videos` / `images`), `columns` (other rows with media lists),
    else None."""
    keys = set(row)
    if "reward_model" in keys:
        return "verl"
    if not keys & {"videos", "images"}:
        return None
    if keys >= ORARL_FIELDS:
        return "orarl"
    return "easyr1" if "problem" in keys else "columns"


def detect_format(row: dict[str, Any]) -> str | None:
    """The format whose signature fields `row` has, else None. A row with media (`videos`,
    `video`, `image`, ...) is never read as text math: without another match it is a
    column layout, whose loader asks for its family."""
    keys = set(row)
    layout = column_layout(row)  # first: OraRL-Data rows also have `family` and `answer`
    if layout is not None:
        return layout
    if {"family", "answer"} <= keys:
        return "records"
    if "relevant_windows" in keys:
        return "vtg"
    if {"sentence", "timestamp"} <= keys:
        return "timer1"
    if "question" in keys and keys & {"options", "choices", "question_type"}:
        return "mcq"
    if {"problem", "problem_type", "data_type", "solution"} <= keys:
        return "video_r1"
    if keys & {"prompt", "problem", "question"} and keys & {"answer", "solution", "ground_truth"}:
        return "columns" if keys & MEDIA_FIELDS else "math"
    return None


def resolve_family(family: str | Family | None) -> Family | None:
    return None if family is None else parse_family(family)
