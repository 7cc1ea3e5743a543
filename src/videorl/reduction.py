"""How a step metric combines over parts: dynamic sampling's draws within a rank
(`rollout.batch.merge_metrics`), then the ranks (`distributed.reduce_metrics`).

Each metric's reduction is declared once, by the value its producer returns, and both
reducers apply it through `combine`:

- a `Summed` value adds up over draws and ranks: counts of events and the seconds they took
  (`reward/samples`, `reward/failed_<reason>`, `reward/seconds`, `data/skipped_media`,
  `data/skipped_long_prompts`), so the logged value is the step's total;
- any other number is a mean: weighted by each draw's rows within a rank, equal-weighted
  over the ranks (which hold equal shares of the step's prompts). Per-rank figures such as
  `rows/*` and `dynamic_sampling/kept_groups` are means over the ranks;
- a `Maxed` value is the largest over draws and ranks (`tools/turns_max`).
"""

from __future__ import annotations

from collections.abc import Sequence


class Summed(float):
    """A metric value that adds up over draws and ranks (a count, or seconds of work). It is
    the float it holds everywhere else: it compares, prints and serialises as that float."""

    __slots__ = ()

    def __repr__(self) -> str:
        return float.__repr__(self)


class Maxed(float):
    """A metric value whose combination over draws and ranks is the largest
    (`tools/turns_max`); otherwise the float it holds, as `Summed`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return float.__repr__(self)


def combine(parts: Sequence[tuple[float, float]]) -> float:
    """One metric from its `(value, weight)` parts: the `Summed` total or the `Maxed`
    maximum when the producer declared it so, else the weighted mean (the last value when
    every weight is 0)."""
    if any(isinstance(value, Summed) for value, _ in parts):
        return Summed(sum(value for value, _ in parts))
    if any(isinstance(value, Maxed) for value, _ in parts):
        return Maxed(max(value for value, _ in parts))
    weight = sum(w for _, w in parts)
    return float(sum(value * w for value, w in parts) / weight if weight else parts[-1][0])
