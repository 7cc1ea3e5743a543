"""Evaluation with tools (`videorl eval --model M --tools get_clip,crop`, docs/tools.md).

The records are answered with the trainer's multi-turn loop (`HFBackend` with tools), then
answered again by the same model in one turn from prompts without the tool list, and
metrics.json's `tools` entry puts the two side by side, per family, over the same records:

    tool_gain[family][metric] = with_tools[family][metric] - without_tools[family][metric]

with what the tool-using answers did: calls and errors per answer, model turns (mean,
max) and the share of answers that called a tool at least once. The answers without tools
go to `OUT/no_tools/predictions.jsonl` (a `--resume` continues them like the real ones).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from videorl.eval.predictions import Prediction
from videorl.eval.scoring import SampleResult, summarize
from videorl.rollout.multiturn import ToolUse, tool_use_summary


def tool_use(predictions: Sequence[Prediction]) -> dict[str, float]:
    """Calls and errors per answer, turns (mean, max) and the share of answers that called
    at least once (`tool_use_summary`, as validation inside training reports them), over
    the answers that have a trajectory (`Prediction.tools`)."""
    return tool_use_summary(
        [ToolUse.from_dict(p.tools) for p in predictions if p.tools is not None]
    )


def tools_summary(
    with_tools: Sequence[SampleResult],
    without_tools: Sequence[SampleResult],
    predictions: Sequence[Prediction],
    names: Sequence[str],
    max_turns: int,
) -> dict[str, Any]:
    """metrics.json's `tools` entry: the tools, their use, and each family's metrics with
    and without them and the difference (the tool gain)."""
    on = {f.value: s.metrics for f, s in summarize(with_tools).items()}
    off = {f.value: s.metrics for f, s in summarize(without_tools).items()}
    gain = {
        family: {
            m: value - off[family][m] for m, value in metrics.items() if m in off.get(family, {})
        }
        for family, metrics in on.items()
    }
    return {
        "tools": list(names),
        "max_turns": max_turns,
        "use": tool_use(predictions),
        "with_tools": on,
        "without_tools": off,
        "tool_gain": gain,
    }


def tool_rows(metrics: dict[str, Any]) -> list[tuple[str, str, float, float, float]]:
    """(family, metric, with tools, without tools, gain) of metrics.json's `tools` entry."""
    entry = metrics.get("tools")
    if not entry:
        return []
    return [
        (
            family,
            metric,
            entry["with_tools"][family][metric],
            entry["without_tools"][family][metric],
            gain,
        )
        for family, gains in entry["tool_gain"].items()
        for metric, gain in gains.items()
    ]
