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

from videorl.data.families import Family, PartTable, families
from videorl.data.records import TaskRecord, answer_to_dict
from videorl.eval import parsing
from videorl.eval.metrics import temporal

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


def values_of(samples: Sequence[SampleResult], key: str) -> list[float]:
    """The per-sample value `key` of each sample (a summary's input)."""
    return [s.values[key] for s in samples]


@dataclass(frozen=True)
class FamilyEval:
    """How a benchmark scores one family (`tasks/<family>/evaluation.py`): `score(record,
    text)` -> (prediction, values incl. "score"); `summary(samples)` -> the reported
    metrics (percent); `sample_metric`: the per-sample value the report's histogram plots
    (None: no histogram); `blind(train, val)` -> the best prompt-only answer's scores."""

    score: Callable[[TaskRecord, str], Scored]
    summary: Callable[[Sequence[SampleResult]], dict[str, float]]
    sample_metric: str | None = None
    blind: Callable[[Sequence[TaskRecord], Sequence[TaskRecord]], dict[str, Any]] | None = None


FAMILY_EVALS: PartTable[FamilyEval] = PartTable("evaluation", "evaluation")


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
    prediction, values = FAMILY_EVALS[record.family].score(record, text)
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


def _summary(family: Family, samples: Sequence[SampleResult]) -> dict[str, float]:
    return FAMILY_EVALS[family].summary(samples)


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
