"""The result of scoring one response, and the zero result of a sample that failed."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

# Why a sample could not be scored; each is counted as `reward/failed_<reason>`.
FAILURE_REASONS = ("exception", "timeout", "crash")


@dataclass(frozen=True)
class RewardResult:
    """`overall` is the scalar reward; `components` are reward terms in [0, 1] and always
    hold `format`, `task` and `overall`, plus family extras (`iou`, `coverage`, ...);
    `error` is `"<reason>: <detail>"` when the sample could not be scored (and then every
    component is 0). `counters` are counts of what scoring the row did, not reward terms
    (the LLM judge's `judge/calls`, `judge/failed_<reason>`): the step sums each over its
    rows as `reward/<counter>` (`rewards/batch.py`)."""

    overall: float
    components: dict[str, float]
    error: str | None = None
    counters: dict[str, float] = field(default_factory=dict)

    @property
    def failure_reason(self) -> str | None:
        """`exception`, `timeout` or `crash` for a failed sample, else None."""
        return None if self.error is None else self.error.split(":", 1)[0]


def failed(reason: str, detail: str) -> RewardResult:
    """The zero result of a sample that raised, hung or killed its worker."""
    if reason not in FAILURE_REASONS:
        raise ValueError(f"failure reason {reason!r} is not one of {FAILURE_REASONS}")
    zeros = {"format": 0.0, "task": 0.0, "overall": 0.0}
    return RewardResult(0.0, zeros, f"{reason}: {detail}")


def unit(value: object) -> float:
    """A score clamped to [0, 1]; NaN and anything that is not a number give 0."""
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return 0.0
    if math.isnan(number):
        return 0.0
    return min(1.0, max(0.0, number))
