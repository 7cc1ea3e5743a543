"""Temporal grounding: find the start and end of a described moment (docs/methods.md#rewards).

Answer `TemporalAnswer` (windows in seconds); reward `reward.py` (OraRL's: `orarl.py`);
evaluation R1@m and mIoU (`eval/metrics/temporal.py`); synthetic videos where a shape appears,
changes colour or moves over a 1-1.5 s event.

This package is the family: this module registers what reading and prompting a record
needs; `reward`, `evaluation`, `synth` and `demo` register the rest when first asked.
"""

from __future__ import annotations

import re
from typing import Any

from videorl.data.columns import json_cell, object_cell
from videorl.data.families import Family, TaskFamily, register_family
from videorl.data.formats import windows_of
from videorl.data.records import TemporalAnswer
from videorl.errors import DataError
from videorl.tasks.temporal_grounding.prompts import orarl_temporal, taro_temporal, temporal

_SPAN = re.compile(r"([-+]?\d*\.?\d+)\s*(?:s\b|seconds?\b)?\s*(?:to|and|-|–)\s*([-+]?\d*\.?\d+)")


def cell_answer(raw: Any, _options: tuple[str, ...], column: str) -> TemporalAnswer:
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


ALIASES = ("vtg", "temporal", "grounding", "moment_retrieval")
PUBLISHED = {"orarl": orarl_temporal, "taro": taro_temporal}
register_family(
    TaskFamily(
        "temporal_grounding",
        "tg",
        TemporalAnswer.from_dict,
        temporal,
        __name__,
        ALIASES,
        cell_answer=cell_answer,
        time_windows=True,
        published=PUBLISHED,
    )
)
