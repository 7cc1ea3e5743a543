"""Choice and number metrics: video QA, spatial intelligence, math
(docs/methods.md#evaluation-metrics).

- QA: `accuracy = 100 / N * #{predicted letter == answer}` (unparsed = wrong) and
  `macro_accuracy` = mean over question types (the record's `subtype`) of the per-type
  accuracy.
- SI: numeric questions score `MRA(p, t) = mean over theta in {0.50, ..., 0.95} of
  1[|p - t| / |t| <= 1 - theta]` (section 1.2), choice questions exact match; reported are
  `MRA` (mean over numeric questions), `accuracy` (over choice questions) and `overall`,
  the mean over question types of their mean score (the VSI-Bench average).
- Math: `accuracy` of math-verify equivalence.
All in percent.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

UNTYPED = "all"


def mean_percent(values: Sequence[float]) -> float:
    return 100.0 * sum(values) / len(values) if values else 0.0


def by_type(values: Sequence[float], types: Sequence[str | None]) -> dict[str, float]:
    """Mean per question type, in percent (records without a type form `all`)."""
    groups: dict[str, list[float]] = defaultdict(list)
    for value, kind in zip(values, types, strict=True):
        groups[kind or UNTYPED].append(value)
    return {kind: mean_percent(group) for kind, group in sorted(groups.items())}


def summarize_choice(correct: Sequence[float], types: Sequence[str | None]) -> dict[str, float]:
    """`accuracy` and `macro_accuracy` (mean of the per-type accuracies)."""
    per_type = by_type(correct, types)
    return {
        "accuracy": mean_percent(correct),
        "macro_accuracy": sum(per_type.values()) / len(per_type) if per_type else 0.0,
    }


def summarize_spatial(
    scores: Sequence[float], numeric: Sequence[bool], types: Sequence[str | None]
) -> dict[str, float]:
    """`MRA` over numeric questions, `accuracy` over choice questions and `overall` (mean
    over question types). A kind that is absent is left out."""
    numbers = [s for s, is_number in zip(scores, numeric, strict=True) if is_number]
    letters = [s for s, is_number in zip(scores, numeric, strict=True) if not is_number]
    out: dict[str, float] = {}
    if numbers:
        out["MRA"] = mean_percent(numbers)
    if letters:
        out["accuracy"] = mean_percent(letters)
    per_type = by_type(scores, types)
    out["overall"] = sum(per_type.values()) / len(per_type) if per_type else 0.0
    return out
