"""The `TaskRecord` schema shared by every task family, its typed answers and the
validators that read them.

A record is one prompt: the problem text, a typed ground-truth answer, and references to
its media. Records round-trip through plain JSON dicts (`to_dict` / `record_from_dict`),
which is the generic JSONL/Parquet format of videorl.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from videorl.data.families import Family, parse_family
from videorl.errors import DataError
from videorl.video.media import MediaRef

Box = tuple[float, float, float, float]
Point = tuple[float, float]
LETTERS = "ABCDEFGH"  # multiple-choice option letters, in order


_CAPTION_TIMES = re.compile(
    r"^\s*(?:from\s+([-+]?\d*\.?\d+)\s*s?\s+(?:to|-)\s+([-+]?\d*\.?\d+)\s*s?"
    r"|at\s+([-+]?\d*\.?\d+)\s*s?)\s*[,:]\s*",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class DenseCaption:
    """A timestamped caption `From start to end, text` (TaRO constructed reasoning).

    `line`: the caption exactly as the data wrote it (TaRO's `train.json` ships each caption
    as one formatted string, which its `sample_reasoning` joins as is); constructed reasoning
    then uses it verbatim. `start` / `end` are read from its `From S s to E s,` / `At T s,`
    head (0 when it states no time)."""

    start: float
    end: float
    text: str
    line: str | None = None

    @classmethod
    def from_line(cls, line: str) -> DenseCaption:
        """A caption given as one formatted string, kept verbatim in `line`."""
        match = _CAPTION_TIMES.match(line)
        if match is None:
            return cls(0.0, 0.0, line.strip(), line=line)
        start = match.group(1) if match.group(1) is not None else match.group(3)
        end = match.group(2) if match.group(2) is not None else match.group(3)
        return cls(float(start), float(end), line[match.end() :].strip(), line=line)

    def as_line(self) -> str:
        """The line constructed reasoning writes: `line` when the data gave one, else
        `From 0.0s to 5.2s, text` (the form of TaRO's prompt example)."""
        if self.line is not None:
            return self.line
        return f"From {self.start:.1f}s to {self.end:.1f}s, {self.text}"


# ----- typed answers, one per answer shape; each reads its JSON form (`from_dict`) -------------------------------------------------


@dataclass(frozen=True)
class TemporalAnswer:
    """Temporal grounding: one or more ground-truth windows in seconds."""

    windows: tuple[tuple[float, float], ...]

    def to_dict(self) -> dict[str, Any]:
        return {"windows": [list(w) for w in self.windows]}

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str) -> TemporalAnswer:
        windows = require(data, "windows", where)
        if not isinstance(windows, (list, tuple)) or not windows:
            raise DataError(f"{where}.windows: expected a non-empty list of windows")
        return cls(tuple(window_value(w, f"{where}.windows") for w in windows))


@dataclass(frozen=True)
class BoxAnswer:
    """Spatial grounding: one box [x1, y1, x2, y2] in the record's `box_format`."""

    box: Box

    def to_dict(self) -> dict[str, Any]:
        return {"box": list(self.box)}

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str) -> BoxAnswer:
        return cls(box_value(require(data, "box", where), f"{where}.box"))


@dataclass(frozen=True)
class SegmentationAnswer:
    """Segmentation: a box, 3 positive and 3 negative points, the time (video) and an
    optional COCO RLE mask `{"size": [h, w], "counts": str}`. A video may also carry a mask
    per frame, `frame_masks` (source frame index as str -> RLE, OraRL's
    `segmentation_output.segmentation_rle`): `reward.mode: orarl` scores the frame at the
    predicted time (`tasks/segmentation/orarl.py: frame_at`)."""

    box: Box
    positive_points: tuple[Point, ...]
    negative_points: tuple[Point, ...]
    time: float | None = None
    mask_rle: dict[str, Any] | None = None
    frame_masks: dict[str, dict[str, Any]] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "box": list(self.box),
            "positive_points": [list(p) for p in self.positive_points],
            "negative_points": [list(p) for p in self.negative_points],
        }
        optional = {"time": self.time, "mask_rle": self.mask_rle, "frame_masks": self.frame_masks}
        out.update({k: v for k, v in optional.items() if v is not None})
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str) -> SegmentationAnswer:
        time = data.get("time")
        positive = require(data, "positive_points", where)
        negative = require(data, "negative_points", where)
        return cls(
            box=box_value(require(data, "box", where), f"{where}.box"),
            positive_points=points_value(positive, f"{where}.positive_points"),
            negative_points=points_value(negative, f"{where}.negative_points"),
            time=None if time is None else finite_number(time, f"{where}.time"),
            mask_rle=data.get("mask_rle"),
            frame_masks=frame_masks_value(data.get("frame_masks"), f"{where}.frame_masks"),
        )


@dataclass(frozen=True)
class TrackingAnswer:
    """Tracking: a box per annotated source-frame index (keys are frame numbers as str)."""

    boxes: dict[str, Box]

    def to_dict(self) -> dict[str, Any]:
        return {"boxes": {k: list(v) for k, v in self.boxes.items()}}

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str) -> TrackingAnswer:
        boxes = require(data, "boxes", where)
        if not isinstance(boxes, dict) or not boxes:
            raise DataError(f"{where}.boxes: expected a non-empty object frame -> box")
        return cls({str(k): box_value(v, f"{where}.boxes[{k}]") for k, v in boxes.items()})


@dataclass(frozen=True)
class SpatioTemporalAnswer:
    """Spatio-temporal grounding: a time window and boxes keyed by second (as str)."""

    time: tuple[float, float]
    boxes: dict[str, Box]

    def to_dict(self) -> dict[str, Any]:
        return {"time": list(self.time), "boxes": {k: list(v) for k, v in self.boxes.items()}}

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str) -> SpatioTemporalAnswer:
        boxes = require(data, "boxes", where)
        if not isinstance(boxes, dict):
            raise DataError(f"{where}.boxes: expected an object second -> box")
        return cls(
            time=window_value(require(data, "time", where), f"{where}.time"),
            boxes={str(k): box_value(v, f"{where}.boxes[{k}]") for k, v in boxes.items()},
        )


@dataclass(frozen=True)
class ChoiceAnswer:
    """Multiple choice (video QA, choice-type spatial intelligence): one letter A-H."""

    letter: str

    def to_dict(self) -> dict[str, Any]:
        return {"letter": self.letter}

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str) -> ChoiceAnswer:
        return choice_value(require(data, "letter", where), f"{where}.letter")


@dataclass(frozen=True)
class NumericAnswer:
    """Numeric spatial intelligence: a number scored by mean relative accuracy."""

    value: float

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value}

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str) -> NumericAnswer:
        return cls(finite_number(require(data, "value", where), f"{where}.value"))


@dataclass(frozen=True)
class MathAnswer:
    """Text-only math: the reference final answer (LaTeX or plain)."""

    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text}

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str) -> MathAnswer:
        return cls(str(require(data, "text", where)))


@dataclass(frozen=True)
class TextAnswer:
    """Open-ended video QA: a free-text reference answer (LongVT's `reward_model.ground_truth`),
    scored by an LLM judge when `reward.judge.url` is set (`rewards/judge.py`), else by a
    normalised exact match."""

    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text}

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str) -> TextAnswer:
        value = require(data, "text", where)
        if not isinstance(value, str) or not value.strip():
            raise DataError(f"{where}.text: expected a non-empty answer text, got {value!r}")
        return cls(value.strip())


Answer = (
    TemporalAnswer
    | BoxAnswer
    | SegmentationAnswer
    | TrackingAnswer
    | SpatioTemporalAnswer
    | ChoiceAnswer
    | NumericAnswer
    | MathAnswer
    | TextAnswer
)


AnswerT = TypeVar("AnswerT")  # a family's answer type (its own, outside `Answer`, too)


@dataclass(frozen=True)
class TaskRecord:
    """One prompt of any family (docs/methods.md#rewards).

    `box_format` says how boxes and points are expressed: `abs` (pixels of a `width` x
    `height` frame) or `norm1000` (0..1000 on both axes).

    `problem` is the task's query or question (what prompt templates wrap, what TaRO's
    constructed reasoning names). A row that carries its own full prompt keeps it in
    `prompt`: the user text used verbatim, whatever `data.prompt_style`, with a `<video>` /
    `<image>` placeholder where the media goes (none: the media comes first); `system` is its
    system message. `prompt_style` is the published style the row's ecosystem applies to
    `problem` (OraRL-Data: `orarl`), used instead of `data.prompt_style` (`data/prompts.py`).
    """

    id: str
    family: Family
    problem: str
    answer: Answer
    video: MediaRef | None = None
    image: MediaRef | None = None
    duration: float | None = None
    captions: tuple[DenseCaption, ...] = ()
    subtype: str | None = None
    source: str | None = None
    options: tuple[str, ...] = ()
    box_format: str = "abs"
    width: int | None = None
    height: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    prompt: str | None = None
    system: str | None = None
    prompt_style: str | None = None

    @property
    def media(self) -> MediaRef | None:
        return self.video if self.video is not None else self.image

    def answer_as(self, kind: type[AnswerT]) -> AnswerT:
        """The answer, typed as the `kind` a family's code expects; another kind is a bug (a
        record routed to the wrong family), a `TypeError` naming the record."""
        if not isinstance(self.answer, kind):
            raise TypeError(
                f"record {self.id}: not a {kind.__name__} but a {type(self.answer).__name__}"
            )
        return self.answer

    def to_dict(self) -> dict[str, Any]:
        """The generic JSON form read back by `record_from_dict`."""
        out: dict[str, Any] = {
            "id": self.id,
            "family": self.family.value,
            "problem": self.problem,
            "answer": answer_to_dict(self.answer),
        }
        if self.video is not None:
            out["video"] = self.video.to_dict()
        if self.image is not None:
            out["image"] = self.image.to_dict()
        optional = {
            "duration": self.duration,
            "subtype": self.subtype,
            "source": self.source,
            "width": self.width,
            "height": self.height,
            "prompt": self.prompt,
            "system": self.system,
            "prompt_style": self.prompt_style,
        }
        out.update({k: v for k, v in optional.items() if v is not None})
        if self.captions:
            out["captions"] = [
                c.line if c.line is not None else [c.start, c.end, c.text] for c in self.captions
            ]
        if self.options:
            out["options"] = list(self.options)
        if self.box_format != "abs":
            out["box_format"] = self.box_format
        if self.extra:
            out["extra"] = self.extra
        return out


def answer_to_dict(answer: Answer) -> dict[str, Any]:
    """JSON form of a typed answer (each answer type writes its own)."""
    return answer.to_dict()


# ----- parsing and validation --------------------------------------------------------------


def finite_number(value: Any, where: str) -> float:
    """`value` as a float; a non-number or NaN/inf is a `DataError` naming `where`."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise DataError(f"{where}: expected a number, got {value!r}") from None
    if not math.isfinite(number):
        raise DataError(f"{where}: expected a finite number, got {value!r}")
    return number


def box_value(value: Any, where: str) -> Box:
    if not isinstance(value, (list, tuple)) or len(value) != 4:
        raise DataError(f"{where}: expected a box [x1, y1, x2, y2], got {value!r}")
    x1, y1, x2, y2 = (finite_number(v, where) for v in value)
    if x2 < x1 or y2 < y1:
        raise DataError(f"{where}: box {value!r} has x2 < x1 or y2 < y1")
    return (x1, y1, x2, y2)


def points_value(value: Any, where: str) -> tuple[Point, ...]:
    if not isinstance(value, (list, tuple)) or not all(
        isinstance(p, (list, tuple)) and len(p) == 2 for p in value
    ):
        raise DataError(f"{where}: expected a list of [x, y] points, got {value!r}")
    return tuple((finite_number(p[0], where), finite_number(p[1], where)) for p in value)


def window_value(value: Any, where: str) -> tuple[float, float]:
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise DataError(f"{where}: expected a window [start, end], got {value!r}")
    start, end = finite_number(value[0], where), finite_number(value[1], where)
    if end < start:
        raise DataError(f"{where}: window {value!r} ends before it starts")
    return (start, end)


def require(data: dict[str, Any], key: str, where: str) -> Any:
    if key not in data:
        raise DataError(f"{where}: missing field {key!r}")
    return data[key]


def frame_masks_value(value: Any, where: str) -> dict[str, dict[str, Any]] | None:
    if value is None:
        return None
    if (
        not isinstance(value, dict)
        or not value
        or not all(isinstance(v, dict) for v in value.values())
    ):
        raise DataError(f"{where}: expected a non-empty object frame -> COCO RLE mask")
    return {str(k): v for k, v in value.items()}


def answer_from_dict(family: Family, data: Any, where: str = "answer") -> Answer:
    """Build and validate the typed answer of `family` from its JSON form."""
    if not isinstance(data, dict):
        raise DataError(f"{where}: expected an object, got {data!r}")
    # a user family's answer type is outside the union of the built-in shapes
    return cast(Answer, family.task.answer(data, where))


def choice_value(value: Any, where: str) -> ChoiceAnswer:
    """One option letter A-H (any case, spaces around it) -> a choice answer."""
    letter = str(value).strip().upper()
    if len(letter) != 1 or letter not in LETTERS:
        raise DataError(f"{where}: expected one letter A-H, got {value!r}")
    return ChoiceAnswer(letter)


def _media(data: Any, where: str) -> MediaRef | None:
    if data is None:
        return None
    if isinstance(data, str):
        return MediaRef(path=data)
    if not isinstance(data, dict):
        raise DataError(f"{where}: expected a path or an object with 'path', got {data!r}")
    start, end = data.get("start"), data.get("end")
    return MediaRef(
        path=str(require(data, "path", where)),
        start=None if start is None else finite_number(start, f"{where}.start"),
        end=None if end is None else finite_number(end, f"{where}.end"),
    )


def caption_from_value(value: Any, where: str = "captions") -> DenseCaption:
    """`[start, end, text]` or one formatted string (`From 0.0s to 5.2s, text`, kept
    verbatim) -> a caption."""
    if isinstance(value, str):
        return DenseCaption.from_line(value)
    if not isinstance(value, (list, tuple)) or len(value) != 3:
        raise DataError(f"{where}: expected [start, end, text] or a caption line, got {value!r}")
    return DenseCaption(
        finite_number(value[0], where), finite_number(value[1], where), str(value[2])
    )


def _optional_text(data: dict[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise DataError(f"{key}: expected text, got {type(value).__name__}")
    return value


def record_from_dict(data: Any) -> TaskRecord:
    """Build and validate a record from its generic JSON form; errors name the field."""
    if not isinstance(data, dict):
        raise DataError(f"expected a JSON object per record, got {type(data).__name__}")
    family = parse_family(require(data, "family", "record"))
    captions = tuple(caption_from_value(c) for c in data.get("captions") or ())
    box_format = data.get("box_format", "abs")
    if box_format not in ("abs", "norm1000"):
        raise DataError(f"box_format: expected 'abs' or 'norm1000', got {box_format!r}")
    duration = data.get("duration")
    record = TaskRecord(
        id=str(require(data, "id", "record")),
        family=family,
        problem=str(require(data, "problem", "record")),
        answer=answer_from_dict(family, require(data, "answer", "record")),
        video=_media(data.get("video"), "video"),
        image=_media(data.get("image"), "image"),
        duration=None if duration is None else finite_number(duration, "duration"),
        captions=captions,
        subtype=data.get("subtype"),
        source=data.get("source"),
        options=tuple(str(o) for o in data.get("options") or ()),
        box_format=box_format,
        width=None if data.get("width") is None else int(data["width"]),
        height=None if data.get("height") is None else int(data["height"]),
        extra=dict(data.get("extra") or {}),
        prompt=_optional_text(data, "prompt"),
        system=_optional_text(data, "system"),
        prompt_style=_optional_text(data, "prompt_style"),
    )
    if family.uses_video and record.media is None:
        raise DataError(f"record {record.id}: family {family.value} needs a 'video' or 'image'")
    if record.prompt is not None:
        for kind, media in (("video", record.video), ("image", record.image)):
            count = record.prompt.count(f"<{kind}>")
            if count > (0 if media is None else 1):
                raise DataError(
                    f"record {record.id}: prompt has {count} <{kind}> placeholder(s) for "
                    f"{0 if media is None else 1} {kind}; keep one where the {kind} goes"
                )
    return record
