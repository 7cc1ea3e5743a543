"""The reward router: one response of any family to a `RewardResult` (docs/methods.md#rewards).

`overall = task * format` (or `format + task` with `reward.composition: sum`, TaRO), every
component in [0, 1]; `reward.mode: orarl` scores with OraRL's adapters (`tasks/<family>/orarl.py`),
`video_r1` with Video-R1's `grpo.py` rules (`video_r1`), `videoauto_r1` with VideoAuto-R1's
two boxed answers (`answer_twice`). Never raises: a scorer or plug-in
that raises costs its sample (scored 0, `error` set), never the step.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from videorl.data.records import TaskRecord
from videorl.rewards import answer_twice, video_r1
from videorl.rewards.calls import ToolCallMade, takes_calls
from videorl.rewards.config import RewardConfig
from videorl.rewards.plugins import COUNTERS, load_plugin, plugin_components
from videorl.rewards.registry import FAMILY_REWARDS
from videorl.rewards.result import RewardResult, failed, unit


def builtin_score(record: TaskRecord, response: str, config: RewardConfig) -> RewardResult:
    """The family's own reward: protocol check (format), payload score (task, extras); with
    `reward.mode: orarl`, OraRL's adapter for the family (`FamilyReward.orarl`), math aside; with
    `video_r1`, Video-R1's rules for its multiple-choice and numeric records (`video_r1`)."""
    family = FAMILY_REWARDS[record.family]
    if config.mode == "orarl" and family.orarl is not None:
        fmt, found = family.orarl(record, response)
        components = {name: unit(value) for name, value in found.items()}
        overall = components["task"] * fmt
        return RewardResult(overall, {"format": fmt, **components, "overall": overall})
    if config.mode == "video_r1" and video_r1.supports(record):
        fmt, found = video_r1.score(record, response)
        overall = found["task"] + fmt  # grpo.py: reward_funcs [accuracy, format], summed
        return RewardResult(overall, {"format": fmt, **found, "overall": overall})
    if config.mode == "videoauto_r1" and answer_twice.boxable(record):
        found = answer_twice.score(record, response, config)
        return RewardResult(found["overall"], found)
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
    spec: str,
    record: TaskRecord,
    response: str,
    config: RewardConfig,
    calls: Sequence[ToolCallMade],
) -> RewardResult:
    plugin = load_plugin(spec)
    kwargs = {"calls": tuple(calls)} if takes_calls(plugin) else {}
    output: Any = plugin(record, response, config, **kwargs)
    parts = plugin_components(spec, output)
    counters = {name: float(value) for name, value in parts.pop(COUNTERS, {}).items()}
    components = {name: unit(value) for name, value in parts.items()}
    return RewardResult(components["overall"], components, counters=counters)


def _score(
    record: TaskRecord, response: str, config: RewardConfig, calls: Sequence[ToolCallMade]
) -> RewardResult:
    spec = config.plugins.get(record.family.value)
    if spec is not None and config.plugin_mode == "replace":
        return _plugin_result(spec, record, response, config, calls)
    result = builtin_score(record, response, config)
    if spec is None:
        return result
    extra = _plugin_result(spec, record, response, config, calls)
    weight = config.plugin_weight
    overall = unit((1 - weight) * result.overall + weight * extra.overall)
    components = {
        **result.components,
        **{f"plugin/{k}": v for k, v in extra.components.items()},
        "overall": overall,
    }
    return RewardResult(overall, components, counters={**result.counters, **extra.counters})


def score_response(
    record: TaskRecord,
    response: str,
    config: RewardConfig,
    calls: Sequence[ToolCallMade] = (),
) -> RewardResult:
    """Score one response against its record; a non-string response is scored as empty.
    `calls` (a multi-turn row's tool calls, `rewards/calls.py`) go to plug-ins that take them."""
    text = response if isinstance(response, str) else ""
    try:
        return _score(record, text, config, calls)
    except Exception as exc:  # noqa: BLE001 - any scorer bug must cost one sample only
        return failed(
            "exception",
            f"{record.family.value} record {record.id}: {type(exc).__name__}: {exc}"[:500],
        )
