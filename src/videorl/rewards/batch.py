"""Batch scoring: a list of (record, response) pairs to rewards in batch order, in a worker
pool when `config.workers > 1`, else in-process; plus the step's reward metrics."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from videorl.data.records import TaskRecord
from videorl.reduction import MetricValue, summed
from videorl.rewards.calls import ToolCallMade
from videorl.rewards.config import RewardConfig
from videorl.rewards.pool import ScoringPool
from videorl.rewards.result import FAILURE_REASONS, RewardResult
from videorl.rewards.router import score_response

# Metric prefixes: the policy's rows, the OraRL annotation rows, the TaRO constructed rows.
POLICY_PREFIX = "reward/"
ANNOTATION_PREFIX = "reward/annotation/"
CONSTRUCTED_PREFIX = "reward/constructed/"


@dataclass(frozen=True)
class BatchScores:
    """Per-row results in batch order, the batch's metrics and the seconds scoring took."""

    results: list[RewardResult]
    metrics: dict[str, MetricValue]
    seconds: float

    @property
    def overall(self) -> list[float]:
        return [result.overall for result in self.results]


def batch_metrics(
    records: Sequence[TaskRecord],
    results: Sequence[RewardResult],
    seconds: float | None,
    prefix: str = POLICY_PREFIX,
) -> dict[str, MetricValue]:
    """`reward/samples`, `reward/seconds` (when `seconds` is given), `reward/mean`,
    `reward/format_mean`, `reward/failed_<reason>` (counts, every reason always present),
    `reward/<counter>` (`counter_metrics`: e.g. the LLM judge's, when the rows carry
    counters), `reward/<family>/mean` (`prefix` replaces `reward/`, e.g.
    `reward/annotation/` for the annotation rows). The counts and the seconds are summed over
    draws and ranks; the rest are means."""
    count = len(results)
    metrics: dict[str, MetricValue] = {f"{prefix}samples": summed(count)}
    if seconds is not None:
        metrics[f"{prefix}seconds"] = summed(seconds)
    metrics[f"{prefix}mean"] = sum(r.overall for r in results) / count if count else 0.0
    metrics[f"{prefix}format_mean"] = (
        sum(r.components.get("format", 0.0) for r in results) / count if count else 0.0
    )
    for reason in FAILURE_REASONS:
        metrics[f"{prefix}failed_{reason}"] = summed(
            sum(r.failure_reason == reason for r in results)
        )
    metrics.update(counter_metrics(results, prefix))
    by_family: dict[str, list[float]] = defaultdict(list)
    for record, result in zip(records, results, strict=True):
        by_family[record.family.short].append(result.overall)
    for short, values in sorted(by_family.items()):
        metrics[f"{prefix}{short}/mean"] = sum(values) / len(values)
    return metrics


def counter_metrics(
    results: Sequence[RewardResult], prefix: str = POLICY_PREFIX
) -> dict[str, MetricValue]:
    """`reward/<counter>` for each counter a row carries (`RewardResult.counters`, e.g. the
    LLM judge's `judge/calls` and `judge/failed_<reason>`): its sum over the rows (0 where a
    row lacks it), summed over draws and ranks; nothing when no row carries counters."""
    names = dict.fromkeys(name for r in results for name in r.counters)
    return {
        f"{prefix}{name}": summed(sum(r.counters.get(name, 0.0) for r in results)) for name in names
    }


def score_batch(
    records: Sequence[TaskRecord],
    responses: Sequence[str],
    config: RewardConfig,
    pool: ScoringPool | None = None,
    calls: Sequence[Sequence[ToolCallMade]] | None = None,
) -> BatchScores:
    """Score every row, keeping batch order; a row that raises, hangs (pool only) or kills its
    worker scores 0 and is counted in `reward/failed_<reason>`. Pass a long-lived `pool` to
    avoid starting workers per call; without one, a pool lives for this call only. `calls`
    (per row, multi-turn rollouts) go to the reward plug-ins that take them."""
    if len(records) != len(responses):
        raise ValueError(
            f"{len(records)} records but {len(responses)} responses; give one response per record"
        )
    if pool is not None and pool.config != config:
        raise ValueError("the pool was built for another RewardConfig; build it with this config")
    row_calls = list(calls) if calls is not None else [()] * len(records)
    start = time.perf_counter()
    if pool is not None:
        results = pool.score(records, responses, row_calls)
    elif config.workers > 1 and len(records) > 1:
        with ScoringPool(config, min(config.workers, len(records))) as temporary:
            results = temporary.score(records, responses, row_calls)
    else:
        results = [
            score_response(record, response, config, made)
            for record, response, made in zip(records, responses, row_calls, strict=True)
        ]
    seconds = time.perf_counter() - start
    return BatchScores(results, batch_metrics(records, results, seconds), seconds)
