"""Temporal grounding: find the start and end of a described moment (docs/methods.md#rewards).

Answer `TemporalAnswer` (windows in seconds); reward `rewards/temporal_grounding.py`;
evaluation R1@m and mIoU (`eval/metrics/temporal.py`); synthetic videos where a shape appears,
changes colour or moves over a 1-1.5 s event.
"""

from __future__ import annotations

import re
from typing import Any

from videorl.data.columns import json_cell, object_cell
from videorl.data.families import Family, TaskFamily, register_family
from videorl.data.formats import windows_of
from videorl.data.records import (
    TemporalAnswer,
    require,
    window_value,
)
from videorl.errors import DataError
from videorl.tasks.temporal_grounding.prompts import orarl_temporal, taro_temporal, temporal

_SPAN = re.compile(r"([-+]?\d*\.?\d+)\s*(?:s\b|seconds?\b)?\s*(?:to|and|-|–)\s*([-+]?\d*\.?\d+)")


def answer(data: dict[str, Any], where: str) -> TemporalAnswer:
    windows = require(data, "windows", where)
    if not isinstance(windows, (list, tuple)) or not windows:
        raise DataError(f"{where}.windows: expected a non-empty list of windows")
    return TemporalAnswer(tuple(window_value(w, f"{where}.windows") for w in windows))


def cell_answer(raw: Any, options: tuple[str, ...], column: str) -> TemporalAnswer:
    """A window object, `{"time": [S, E]}` / `{"start", "end"}`, `[S, E]` or `"S to E"`."""
    raw = json_cell(raw)
    if isinstance(raw, dict):
        if "windows" in raw:
            return object_cell(Family("temporal_grounding"), raw, column)
        raw = raw.get("time") or [raw.get("start"), raw.get("end")]
    elif isinstance(raw, str):
        match = _SPAN.search(raw)
        if match is None:
            raise DataError(f"column {column!r}: expected a span 'S to E' or [S, E], got {raw!r}")
        raw = [match.group(1), match.group(2)]
    return TemporalAnswer(tuple(windows_of(raw, column)))


register_family(
    TaskFamily(
        name="temporal_grounding",
        short="tg",
        aliases=("vtg", "temporal", "grounding", "moment_retrieval"),
        answer=answer,
        cell_answer=cell_answer,
        prompt=temporal,
        published={"orarl": orarl_temporal, "taro": taro_temporal},
        time_windows=True,
        package=__name__,
    )
)
