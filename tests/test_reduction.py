"""Each metric's reduction is declared once, by its value (`Metric`), and the two reducers
apply it the same way: over dynamic sampling's draws within a rank (`merge_metrics`) and over the ranks
(`reduce_metrics`). They used to disagree: the draws summed the counts (chosen by
substrings of the name) while the ranks averaged every number, so on two ranks
`reward/samples` was one rank's count, not the step's."""

from __future__ import annotations

import json
import pickle
from typing import Any

import pytest

from videorl import distributed
from videorl.data.families import Family
from videorl.data.records import TaskRecord, TemporalAnswer
from videorl.distributed import DistInfo, reduce_metrics
from videorl.reduction import Metric, MetricValue, combine, logged, maxed, summed
from videorl.rewards.batch import batch_metrics
from videorl.rewards.result import RewardResult
from videorl.rollout.batch import merge_metrics


def _part(rows: int, overall: float, failed: int = 0) -> dict[str, MetricValue]:
    """The reward metrics of one draw (or one rank) of `rows` rows, `failed` of them timed out."""
    record = TaskRecord(
        id="r",
        family=Family("temporal_grounding"),
        problem="p",
        answer=TemporalAnswer(((1.0, 2.0),)),
        duration=4.0,
    )
    results = [
        RewardResult(overall=overall, components={"format": 1.0}, error="timeout: slow")
        if i < failed
        else RewardResult(overall=overall, components={"format": 1.0})
        for i in range(rows)
    ]
    return batch_metrics([record] * rows, results, seconds=0.5)


def _over_ranks(monkeypatch, per_rank: list[dict[str, Any]]) -> dict[str, Any]:
    def gather(out, _):
        out[:] = per_rank

    monkeypatch.setattr(distributed.dist, "all_gather_object", gather)
    return reduce_metrics(per_rank[0], DistInfo(rank=0, world_size=len(per_rank)))


def test_combine_sums_what_is_declared_summed_and_averages_the_rest():
    assert combine([(summed(3), 1), (summed(5), 3)]) == summed(8.0)
    assert combine([(maxed(3), 1), (maxed(5), 3)]) == maxed(5.0)
    assert combine([(1.0, 1), (0.0, 3)]) == 0.25  # weighted by rows
    assert not isinstance(combine([(1.0, 1), (0.0, 3)]), Metric)
    assert combine([(2.0, 0), (4.0, 0)]) == 4.0  # no rows anywhere: the last value
    with pytest.raises(ValueError, match="declare it one way"):
        combine([(summed(3), 1), (3.0, 1)])


def test_arithmetic_keeps_the_declared_reduction_or_is_refused():
    assert summed(2) + summed(3) == summed(5)  # was a plain float: the tag is kept
    for refused in (lambda: summed(2) + 3.0, lambda: 1 + summed(2), lambda: summed(2) * 2):  # type: ignore[operator]  # refused on purpose
        with pytest.raises(TypeError):
            refused()
    with pytest.raises(TypeError, match="no meaning"):
        maxed(2) + maxed(3)
    with pytest.raises(TypeError):
        sum([summed(1), summed(2)])  # type: ignore[list-item]  # refused on purpose; sum() starts from 0, a plain number


def test_a_metric_is_its_float_in_logs_and_keeps_its_reduction_across_processes():
    value = summed(64.0)
    assert json.dumps(logged({"reward/samples": value})) == '{"reward/samples": 64.0}'
    assert pickle.loads(pickle.dumps(value)) == value  # all_gather_object pickles


def test_reward_counts_and_seconds_are_declared_summed_the_means_are_not():
    metrics = _part(4, 0.5, failed=1)
    declared = {k for k, v in metrics.items() if isinstance(v, Metric) and v.reduce == "sum"}
    assert declared == {"reward/seconds", "reward/samples"} | {
        k for k in metrics if k.startswith("reward/failed_")
    }
    assert metrics["reward/failed_timeout"] == summed(1.0)


def test_draws_and_ranks_reduce_every_metric_the_same_way(monkeypatch):
    parts = [_part(4, 1.0, failed=1), _part(4, 0.0, failed=2)]
    over_draws = merge_metrics([(m, 4) for m in parts])  # equal rows: weights agree
    over_ranks = _over_ranks(monkeypatch, parts)
    assert over_ranks == logged(over_draws)  # the ranks' values are the ones logged
    assert over_ranks["reward/samples"] == 8.0  # the step's rows, not one rank's 4
    assert over_ranks["reward/failed_timeout"] == 3.0
    assert over_ranks["reward/seconds"] == 1.0
    assert over_ranks["reward/mean"] == pytest.approx(0.5)
    assert over_ranks["reward/tg/mean"] == pytest.approx(0.5)


def test_ranks_concatenate_lists_and_skip_missing_values(monkeypatch):
    per_rank = [
        {"loss": 1.0, "ids": ["a"], "only0": 4.0, "none": None, "n": summed(2)},
        {"loss": 3.0, "ids": ["b"], "none": None, "n": summed(3)},
    ]
    merged = _over_ranks(monkeypatch, per_rank)
    assert merged == {"loss": 2.0, "ids": ["a", "b"], "only0": 4.0, "n": 5.0}
    assert reduce_metrics({"x": 1}, DistInfo()) == {"x": 1}
