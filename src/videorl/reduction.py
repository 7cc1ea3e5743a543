"""How a step metric combines over parts: dynamic sampling's draws within a rank
(`rollout.batch.merge_metrics`), then the ranks (`distributed.reduce_metrics`).

Each metric's reduction is declared once, by the value its producer returns, and both
reducers apply it through `combine`:

- a plain number is a mean: weighted by each draw's rows within a rank, equal-weighted over
  the ranks (which hold equal shares of the step's prompts). Per-rank figures such as
  `rows/*` and `dynamic_sampling/kept_groups` are means over the ranks;
- `Metric(v, "sum")` (`summed(v)`) adds up over draws and ranks: counts of events and the
  seconds they took (`reward/samples`, `reward/failed_<reason>`, `reward/seconds`,
  `data/skipped_media`, `data/skipped_long_prompts`), so the logged value is the step's total;
- `Metric(v, "max")` (`maxed(v)`) is the largest over draws and ranks (`tools/turns_max`).

A `Metric` is not a number: adding two of one reduction keeps it (`summed(2) + summed(3)`
is `summed(5)`), any other arithmetic is a `TypeError`, so no computation drops the tag on
the way; `logged` turns the values into the floats the sinks write. `Metric(v, scope="draw")`
declares a figure of the step's draws rather than of its rows (prompts skipped, dynamic
sampling's draws): a step left without rows still reports it (`draw_metrics`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

Reduce = Literal["mean", "sum", "max"]
Scope = Literal["rows", "draw"]


@dataclass(frozen=True)
class Metric:
    """A metric value with its reduction over draws and ranks, and what it describes."""

    value: float
    reduce: Reduce = "mean"
    scope: Scope = "rows"

    def __post_init__(self) -> None:
        if self.reduce not in get_args(Reduce) or self.scope not in get_args(Scope):
            raise ValueError(f"a metric reduces by {get_args(Reduce)}, not {self.reduce!r}")
        object.__setattr__(self, "value", float(self.value))

    def __add__(self, other: object) -> Metric:
        """The total of two counts of one scope; anything else is refused."""
        if not isinstance(other, Metric) or (other.reduce, other.scope) != (
            self.reduce,
            self.scope,
        ):
            return NotImplemented
        if self.reduce != "sum":
            raise TypeError(f"adding {self.reduce} metrics has no meaning; combine them")
        return Metric(self.value + other.value, "sum", self.scope)


MetricValue = float | Metric  # a plain number is a mean


def summed(value: float, scope: Scope = "rows") -> Metric:
    """A metric that adds up over draws and ranks (a count, or seconds of work)."""
    return Metric(value, "sum", scope)


def maxed(value: float) -> Metric:
    """A metric whose combination over draws and ranks is the largest."""
    return Metric(value, "max")


def _declared(value: MetricValue) -> Metric:
    return value if isinstance(value, Metric) else Metric(value)


def combine(parts: Sequence[tuple[MetricValue, float]]) -> MetricValue:
    """One metric from its `(value, weight)` parts by their declared reduction: the total,
    the maximum, or the weighted mean (the last value when every weight is 0). A mean given
    as a plain number stays one; parts declared two ways are an error."""
    declared = [(_declared(value), weight) for value, weight in parts]
    kinds = {(m.reduce, m.scope) for m, _ in declared}
    if len(kinds) != 1:
        raise ValueError(f"one metric declared as {sorted(kinds)}: declare it one way")
    (reduce, scope), values = kinds.pop(), [m.value for m, _ in declared]
    if reduce == "sum":
        return Metric(sum(values), reduce, scope)
    if reduce == "max":
        return Metric(max(values), reduce, scope)
    weight = sum(w for _, w in parts)
    mean = (
        sum(v * w for v, (_, w) in zip(values, parts, strict=True)) / weight
        if weight
        else values[-1]
    )
    if any(isinstance(value, Metric) for value, _ in parts):
        return Metric(mean, reduce, scope)
    return float(mean)


def logged(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """The metrics as the sinks write them: each `Metric` its float, the rest as they are."""
    return {k: v.value if isinstance(v, Metric) else v for k, v in metrics.items()}


def draw_metrics(metrics: Mapping[str, Any]) -> dict[str, Metric]:
    """The metrics declared of the step's draws (`scope="draw"`)."""
    return {k: v for k, v in metrics.items() if isinstance(v, Metric) and v.scope == "draw"}
