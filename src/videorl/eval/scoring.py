"""Score one response against its record, and summarize a benchmark's samples per family.

`score_record(record, response)` parses leniently (`eval.parsing`) and computes the
per-sample values of the family's metrics (`eval.metrics`); `summarize(results)` gives the
reported numbers per family with breakdowns by subtype (and by video length for TG).

Denominator convention: every record of the benchmark counts. A record whose media is
missing or cannot be decoded, or that has no prediction, is scored like an unparseable
answer (IoU 0, wrong choice, empty mask) and counted by its status; nothing is dropped.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from videorl.data.families import Family, families
from videorl.data.records import (
    BoxAnswer,
    ChoiceAnswer,
    NumericAnswer,
    SegmentationAnswer,
    SpatioTemporalAnswer,
    TaskRecord,
    TemporalAnswer,
    TextAnswer,
    TrackingAnswer,
    answer_to_dict,
)
from videorl.eval import parsing
from videorl.eval.metrics import boxes, choice, masks, temporal
from videorl.rewards.geometry import mean_relative_accuracy
from videorl.rewards.math_answer import is_equivalent, last_boxed, reference_answer
from videorl.rewards.video_qa import text_match

OK, UNPARSED = "ok", "unparsed"
MISSING_MEDIA, MEDIA_ERROR, NO_PREDICTION = "missing_media", "media_error", "no_prediction"
STATUSES = (OK, UNPARSED, MISSING_MEDIA, MEDIA_ERROR, NO_PREDICTION)
CONVENTION = (
    "all records count: missing or undecodable media, missing predictions and unparseable "
    "answers score 0 (IoU 0 / wrong / empty mask) and are listed by status"
)


@dataclass(frozen=True)
class SampleResult:
    """One record's outcome. `score` is the family's main per-sample value (a fraction: TG,
    SG IoU; TRK AO; STG (tIoU + sIoU) / 2; SEG J; QA, math correctness; SI MRA or
    correctness), used to rank worst cases and compare runs; `values` holds all of them."""

    id: str
    family: Family
    status: str
    score: float
    values: dict[str, float]
    prediction: Any = None
    response: str | None = None
    subtype: str | None = None
    duration: float | None = None
    problem: str = ""
    ground_truth: Any = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if v is not None}
        out["family"] = self.family.value
        return out


Scored = tuple[Any, dict[str, float]]  # (JSON-able prediction or None, values incl. "score")


def score_temporal(record: TaskRecord, text: str) -> Scored:
    assert isinstance(record.answer, TemporalAnswer)
    window = parsing.parse_window(text)
    iou = temporal.query_iou(window, record.answer.windows, record.duration)
    return (None if window is None else list(window)), {"score": iou, "iou": iou}


def score_spatial(record: TaskRecord, text: str) -> Scored:
    assert isinstance(record.answer, BoxAnswer)
    box = parsing.parse_box(text)
    iou = boxes.sample_box_iou(box, record.answer.box)
    return (None if box is None else list(box)), {"score": iou, "iou": iou}


def score_segmentation(record: TaskRecord, text: str) -> Scored:
    answer = record.answer
    assert isinstance(answer, SegmentationAnswer)
    pred = parsing.parse_segmentation(text)
    values = masks.segmentation_scores(
        pred.box, answer, record.box_format, (record.width, record.height)
    )
    values["video"] = float(answer.time is not None)
    prediction = None if pred.box is None else {"box": list(pred.box), "time": pred.time}
    return prediction, {"score": values["j"], **values}


def score_tracking(record: TaskRecord, text: str) -> Scored:
    assert isinstance(record.answer, TrackingAnswer)
    pred = parsing.parse_tracking(text)
    values = boxes.sequence_scores(boxes.frame_ious(pred, record.answer.boxes))
    prediction = None if pred is None else {str(k): list(b) for k, b in pred.items()}
    return prediction, {"score": values["ao"], **values}


def score_spatio_temporal(record: TaskRecord, text: str) -> Scored:
    answer = record.answer
    assert isinstance(answer, SpatioTemporalAnswer)
    pred = parsing.parse_spatio_temporal(text)
    window = None if pred is None else pred.window
    values = boxes.spatio_temporal_scores(
        window, {} if pred is None else pred.boxes, answer.time, answer.boxes, record.duration
    )
    prediction = (
        None
        if pred is None
        else {
            "time": None if window is None else list(window),
            "boxes": {f"{k:g}": list(b) for k, b in pred.boxes.items()},
        }
    )
    return prediction, {"score": (values["tiou"] + values["siou"]) / 2, **values}


def score_choice_or_number(record: TaskRecord, text: str) -> Scored:
    answer = record.answer
    if isinstance(answer, TextAnswer):  # open-ended video QA: the normalised exact match
        stripped = text.strip()
        correct = text_match(stripped, answer.text)
        return stripped or None, {"score": correct, "correct": correct, "numeric": 0.0}
    if isinstance(answer, ChoiceAnswer):
        letter = parsing.parse_choice(text, record.options)
        correct = float(letter == answer.letter)
        return letter, {"score": correct, "correct": correct, "numeric": 0.0}
    assert isinstance(answer, NumericAnswer)
    value = parsing.parse_number(text)
    mra = 0.0 if value is None else mean_relative_accuracy(value, answer.value)
    return value, {"score": mra, "mra": mra, "numeric": 1.0}


def score_math(record: TaskRecord, text: str) -> Scored:
    final = last_boxed(text) or text.strip()
    if not final:
        return None, {"score": 0.0, "correct": 0.0}
    correct = float(is_equivalent(reference_answer(record), final))
    return final, {"score": correct, "correct": correct}


score_video_qa = score_spatial_intelligence = score_choice_or_number


def ground_truth(record: TaskRecord) -> dict[str, Any]:
    """The answer's JSON form for reports (a mask's run lengths are left out)."""
    out = answer_to_dict(record.answer)
    out.pop("mask_rle", None)
    out.pop("frame_masks", None)
    return out


def score_record(
    record: TaskRecord, response: str | None, *, status: str | None = None, error: str | None = None
) -> SampleResult:
    """Parse `response` leniently and score it. `response=None` (no prediction) scores like
    an unparseable answer; `status` overrides the parse status (e.g. `missing_media`)."""
    text = parsing.answer_text(response)
    prediction, values = record.family.task.eval_score(record, text)
    if status is None:
        status = NO_PREDICTION if response is None else (OK if prediction is not None else UNPARSED)
    return SampleResult(
        id=record.id,
        family=record.family,
        status=status,
        score=values.pop("score"),
        values=values,
        prediction=prediction,
        response=response,
        subtype=record.subtype,
        duration=record.duration,
        problem=record.problem,
        ground_truth=ground_truth(record),
        error=error,
    )


# ----- summaries ----------------------------------------------------------------------------


def _values(samples: Sequence[SampleResult], key: str) -> list[float]:
    return [s.values[key] for s in samples]


def summarize_temporal(samples: Sequence[SampleResult]) -> dict[str, float]:
    return temporal.summarize(_values(samples, "iou"))


def summarize_spatial(samples: Sequence[SampleResult]) -> dict[str, float]:
    return boxes.summarize_grounding(_values(samples, "iou"))


def summarize_segmentation(samples: Sequence[SampleResult]) -> dict[str, float]:
    video = [s for s in samples if s.values["video"]]
    image = [s for s in samples if not s.values["video"]]
    out: dict[str, float] = {}
    if video:
        out.update(masks.summarize_video(_values(video, "j"), _values(video, "f")))
    if image:
        out.update(
            masks.summarize_image(
                _values(image, "j"), _values(image, "inter"), _values(image, "union")
            )
        )
    return out


def summarize_tracking(samples: Sequence[SampleResult]) -> dict[str, float]:
    return boxes.summarize_tracking(_values(samples, "ao"), _values(samples, "sr"))


def summarize_spatio_temporal(samples: Sequence[SampleResult]) -> dict[str, float]:
    return boxes.summarize_spatio_temporal(_values(samples, "tiou"), _values(samples, "siou"))


def summarize_video_qa(samples: Sequence[SampleResult]) -> dict[str, float]:
    return choice.summarize_choice(_values(samples, "correct"), [x.subtype for x in samples])


def summarize_spatial_intelligence(samples: Sequence[SampleResult]) -> dict[str, float]:
    numeric = [bool(x.values["numeric"]) for x in samples]
    return choice.summarize_spatial(
        [x.score for x in samples], numeric, [x.subtype for x in samples]
    )


def summarize_math(samples: Sequence[SampleResult]) -> dict[str, float]:
    return {"accuracy": choice.mean_percent(_values(samples, "correct"))}


def _summary(family: Family, samples: Sequence[SampleResult]) -> dict[str, float]:
    return family.task.summary(samples)


def _grouped(
    samples: Sequence[SampleResult],
    key: Callable[[SampleResult], str],
    rank: Callable[[str], Any] = str,
) -> dict[str, list[SampleResult]]:
    """Samples grouped by `key`, groups ordered by `rank` of their name."""
    groups: dict[str, list[SampleResult]] = defaultdict(list)
    for sample in samples:
        groups[key(sample)].append(sample)
    return dict(sorted(groups.items(), key=lambda item: rank(item[0])))


@dataclass(frozen=True)
class FamilySummary:
    """The reported numbers of one family: `metrics` (percent), sample counts by status,
    and the same metrics per subtype (and per video-length bucket for TG)."""

    family: Family
    n: int
    metrics: dict[str, float]
    counts: dict[str, int]
    breakdowns: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "metrics": self.metrics,
            "counts": self.counts,
            "breakdowns": self.breakdowns,
        }


def _breakdown(
    family: Family, groups: dict[str, list[SampleResult]]
) -> dict[str, dict[str, float]]:
    return {
        name: {"n": float(len(group)), **_summary(family, group)} for name, group in groups.items()
    }


def summarize_family(family: Family, samples: Sequence[SampleResult]) -> FamilySummary:
    """The family's metrics over `samples` (all of one family) with breakdowns."""
    counts = Counter(s.status for s in samples)
    breakdowns: dict[str, dict[str, dict[str, float]]] = {}
    subtypes = _grouped(samples, lambda s: s.subtype or "-")
    if len(subtypes) > 1:
        breakdowns["subtype"] = _breakdown(family, subtypes)
    if family.task.time_windows:
        breakdowns["video_length"] = _breakdown(
            family,
            _grouped(samples, lambda s: temporal.duration_bucket(s.duration), temporal.bucket_rank),
        )
    return FamilySummary(
        family=family,
        n=len(samples),
        metrics=_summary(family, samples),
        counts={status: counts.get(status, 0) for status in STATUSES},
        breakdowns=breakdowns,
    )


def summarize(results: Sequence[SampleResult]) -> dict[Family, FamilySummary]:
    """One summary per family present, in the canonical family order."""
    by_family = _grouped(results, lambda s: s.family.value)
    return {f: summarize_family(f, by_family[f.value]) for f in families() if f.value in by_family}
