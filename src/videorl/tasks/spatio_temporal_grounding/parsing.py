"""A spatio-temporal grounding answer read leniently, as `videorl eval` and the demo read it."""

from __future__ import annotations

from dataclasses import dataclass

from videorl.data.records import Box
from videorl.eval import parsing
from videorl.eval.parsing import Window


@dataclass(frozen=True)
class SpatioTemporalPrediction:
    window: Window | None
    boxes: dict[float, Box]


def parse_spatio_temporal(text: str) -> SpatioTemporalPrediction | None:
    """`{"time": [t0, t1] or "t0 to t1", "boxes": {"<sec>": box}}`; without JSON, a window
    read like a temporal grounding answer. None when neither a window nor a box is found."""
    data = parsing.find_json(text)
    window: Window | None = None
    boxes: dict[float, Box] = {}
    if isinstance(data, dict):
        time = data.get("time")
        if isinstance(time, (list, tuple)) and len(time) == 2:
            ends = [n for n in map(parsing.json_number, time) if n is not None]
            if len(ends) == 2:  # both finite numbers
                window = (min(ends), max(ends))
        elif isinstance(time, str):
            window = parsing.parse_window(time)
        boxes = {
            k: b for k, b in parsing.keyed_boxes(data.get("boxes")).items() if isinstance(k, float)
        }
    else:
        window = parsing.parse_window(text)
    if window is None and not boxes:
        return None
    return SpatioTemporalPrediction(window, boxes)
