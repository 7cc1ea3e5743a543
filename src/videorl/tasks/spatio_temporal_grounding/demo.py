"""What the web demo shows of spatio temporal grounding."""

from __future__ import annotations

from typing import Any

from videorl.data.records import (
    SpatioTemporalAnswer,
)
from videorl.demo import views
from videorl.demo.parts import FAMILY_DEMOS, DemoParts
from videorl.tasks.common import NO_BOX
from videorl.tasks.spatio_temporal_grounding.parsing import parse_spatio_temporal


def _prediction(text: str, options: tuple[str, ...]) -> dict[str, Any]:
    found = parse_spatio_temporal(text)
    return {} if found is None else {"window": found.window, "boxes": found.boxes}


FAMILY_DEMOS.register(
    "spatio_temporal_grounding",
    DemoParts(
        label="spatio-temporal grounding",
        placeholder="the object to find in time and space",
        expected='<answer>{"time": [t0, t1], "boxes": {...}}</answer>',
        blank=lambda options, meta: (
            SpatioTemporalAnswer(time=(0.0, 0.0), boxes={"0": NO_BOX}),
            {},
        ),
        parse=_prediction,
        view=views.spatio_temporal_view,
    ),
)
