"""Batch scoring: a list of (record, response) pairs to rewards in batch order, in a worker
pool when `config.workers > 1`, else in-process; plus the step's reward metrics."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from videorl.data.records import TaskRecord
from videorl.reduction import Summed
from videorl.rewards.calls import ToolCallMade
from videorl.rewards.config import RewardConfig
from videorl.rewards.judge import CALLED, COMPONENT_PREFIX, JUDGE_FAILURES
from videorl.rewards.pool import ScoringPool
from videorl.rewards.result import FAILURE_REASONS, RewardResult
from videorl.rewards.router import score_response

# Metric prefixes: the policy's rows, the OraRL annotation rows, the TaRO constructed rows.
POLICY_PREFIX = "reward/"
ANNOTATION_PREFIX = "reward/annotation/"
CONSTRUCTED_PREFIX = "reward/constructed/"


@dataclass(frozen=True)
class BatchScores:
    """Per-row results in batch order and the batch's metrics."""

    results: list[RewardResult]
    metrics: dict[str, float]

    @property
    def overall(self) -> list[float]:
        return [result.overall for result in self.results]


def batch_metrics(
    records: Sequence[TaskRecord],
    results: Sequence[RewardResult],
    seconds: float,
    prefix: str = POLICY_PREFIX,
) -> dict[str, float]:
    """`reward/mean`, `reward/format_mean`, `reward/<family>/mean`, `reward/failed_<reason>`
    (counts, every reason always present), `reward/judge/*` (`judge_metrics`: only when an
    LLM judge scored the rows), `reward/samples`, `reward/seconds` (`prefix`
    replaces `reward/`, e.g. `reward/annotation/` for the annotation rows). The counts and
    the seconds are `Summed` over draws and ranks; the rest are means."""
    count = len(results)
    metrics: dict[str, float] = {
        f"{prefix}samples": Summed(count),
        f"{prefix}seconds": Summed(seconds),
        f"{prefix}mean": sum(r.overall for r in results) / count if count else 0.0,
        f"{prefix}format_mean": sum(r.components.get("format", 0.0) for r in results) / count
        if count
        else 0.0,
    }
    for reason in FAILURE_REASONS:
        metrics[f"{prefix}failed_{reason}"] = Summed(
            sum(r.failure_reason == reason for r in results)
        )
    metrics.update(judge_metrics(results, prefix))
    by_family: dict[str, list[float]] = defaultdict(list)
    for record, result in zip(records, results, strict=True):
        by_family[record.family.short].append(result.overall)
    for short, values in sorted(by_family.items()):
        metrics[f"{prefix}{short}/mean"] = sum(values) / len(values)
    return metrics


def _judge_value(result: RewardResult, key: str) -> float:
    """A judge component of the plug-in (`plugin/<key>` when it extends a built-in)."""
    return result.components.get(key, result.components.get(f"plugin/{key}", 0.0))


def judge_metrics(results: Sequence[RewardResult], prefix: str = POLICY_PREFIX) -> dict[str, float]:
    """`reward/judge/calls` and `reward/judge/failed_<reason>` (every reason), `Summed`, when
    a row carries the LLM judge's components (`rewards/judge.py`: `reward.judge.url` set and
    a plug-in that asks it); else nothing."""
    if not any(CALLED in r.components or f"plugin/{CALLED}" in r.components for r in results):
        return {}
    metrics: dict[str, float] = {
        f"{prefix}judge/calls": Summed(sum(_judge_value(r, CALLED) for r in results))
    }
    for reason in JUDGE_FAILURES:
        key = f"{COMPONENT_PREFIX}{reason}"
        metrics[f"{prefix}judge/failed_{reason}"] = Summed(
            sum(_judge_value(r, key) for r in results)
        )
    return metrics


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
    return BatchScores(results, batch_metrics(records, results, time.perf_counter() - start))
