"""What the web demo shows of spatial grounding."""

from __future__ import annotations

from videorl.data.records import BoxAnswer
from videorl.demo import views
from videorl.demo.parts import FAMILY_DEMOS, DemoParts
from videorl.eval import parsing
from videorl.tasks.common import NO_BOX

FAMILY_DEMOS.register(
    "spatial_grounding",
    DemoParts(
        label="spatial grounding",
        placeholder="the object to locate, e.g. the blue square",
        expected="<answer>[x1, y1, x2, y2]</answer>",
        blank=lambda options, meta: (BoxAnswer(NO_BOX), {}),
        parse=lambda text, options: {"box": parsing.parse_box(text)},
        view=views.spatial_view,
    ),
)
