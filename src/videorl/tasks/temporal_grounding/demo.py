"""What the web demo shows of temporal grounding."""

from __future__ import annotations

from typing import Any

from videorl.data.records import (
    TemporalAnswer,
)
from videorl.demo import views
from videorl.demo.parts import FAMILY_DEMOS, DemoParts
from videorl.eval import parsing


def _blank(options: tuple[str, ...], meta: Any) -> tuple[TemporalAnswer, dict[str, Any]]:
    return TemporalAnswer(((0.0, 0.0),)), {}


FAMILY_DEMOS.register(
    "temporal_grounding",
    DemoParts(
        label="temporal grounding",
        placeholder="the moment to find, e.g. the red circle is visible",
        expected="<answer>S to E</answer>",
        blank=_blank,
        parse=lambda text, options: {"window": parsing.parse_window(text)},
        view=views.temporal_view,
    ),
)
