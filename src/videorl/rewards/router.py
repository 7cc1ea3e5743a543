"""The reward router: one response of any family to a `RewardResult` (docs/methods.md#rewards).

`overall = task * format` (or `format + task` with `reward.composition: sum`, TaRO), every
component in [0, 1]; `reward.mode: orarl` scores with OraRL's adapters (`orarl_adapters`). Never raises: a scorer or plug-in that
raises costs its sample (scored 0, `error` set), never the step.
"""

from __future__ import annotations

from typing import Any

from videorl.data.records import TaskRecord
from videorl.rewards.config import RewardConfig
from videorl.rewards.orarl_adapters import SCORERS as ORARL_SCORERS
from videorl.rewards.plugins import load_plugin, plugin_components
from videorl.rewards.registry import FAMILY_REWARDS
from videorl.rewards.result import RewardResult, failed, unit


def builtin_score(record: TaskRecord, response: str, config: RewardConfig) -> RewardResult:
    """The family's own reward: protocol check (format), payload score (task, extras); with
    `reward.mode: orarl`, OraRL's adapter for the family (`orarl_adapters`), math aside."""
    if config.mode == "orarl" and record.family in ORARL_SCORERS:
        fmt, found = ORARL_SCORERS[record.family](record, response)
        components = {name: unit(value) for name, value in found.items()}
        overall = components["task"] * fmt
        return RewardResult(overall, {"format": fmt, **components, "overall": overall})
    family = FAMILY_REWARDS[record.family]
    extraction = family.protocol.extract(response, config.think_required)
    fmt = 1.0 if extraction.ok else 0.0
    # An unusable payload still goes through the scorer (as ""), so that every row of a
    # family carries the same component keys.
    parts = {
        name: unit(value)
        for name, value in family.score(record, extraction.payload or "", config).items()
    }
    overall = parts["task"] + fmt if config.composition == "sum" else parts["task"] * fmt
    return RewardResult(overall, {"format": fmt, **parts, "overall": overall})


def _plugin_result(
    spec: str, record: TaskRecord, response: str, config: RewardConfig
) -> dict[str, float]:
    output: Any = load_plugin(spec)(record, response, config)
    return {name: unit(value) for name, value in plugin_components(spec, output).items()}


def _score(record: TaskRecord, response: str, config: RewardConfig) -> RewardResult:
    spec = config.plugins.get(record.family.value)
    if spec is not None and config.plugin_mode == "replace":
        parts = _plugin_result(spec, record, response, config)
        return RewardResult(parts["overall"], parts)
    result = builtin_score(record, response, config)
    if spec is None:
        return result
    extra = _plugin_result(spec, record, response, config)
    weight = config.plugin_weight
    overall = unit((1 - weight) * result.overall + weight * extra["overall"])
    components = {
        **result.components,
        **{f"plugin/{k}": v for k, v in extra.items()},
        "overall": overall,
    }
    return RewardResult(overall, components)


def score_response(record: TaskRecord, response: str, config: RewardConfig) -> RewardResult:
    """Score one response against its record; a non-string response is scored as empty."""
    text = response if isinstance(response, str) else ""
    try:
        return _score(record, text, config)
    except Exception as exc:  # noqa: BLE001 - any scorer bug must cost one sample only
        return failed(
            "exception",
            f"{record.family.value} record {record.id}: {type(exc).__name__}: {exc}"[:500],
        )
