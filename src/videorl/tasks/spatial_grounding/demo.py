"""What the web demo shows of spatial grounding."""

from __future__ import annotations

from typing import Any

from videorl.data.records import Answer, BoxAnswer
from videorl.demo import views
from videorl.demo.inference import Result
from videorl.demo.parts import FAMILY_DEMOS, DemoParts, Pictures
from videorl.eval import parsing
from videorl.tasks.common import NO_BOX
from videorl.video.meta import VideoMeta

# the query box's hint, and the answer format named when a reply does not parse
PLACEHOLDER = "the object to locate, e.g. the blue square"
EXPECTED = "<answer>[x1, y1, x2, y2]</answer>"


def spatial_view(result: Result) -> tuple[str, str, Pictures]:
    box = result.prediction.box
    answer = result.record.answer_as(BoxAnswer)
    truth = answer.box if result.has_truth else None
    text = f"box {views.box_text(box)}" if box else ""
    truth_text = f"box {views.box_text(truth)}" if truth else ""
    middle = result.video.meta.timestamps[len(result.video.meta.timestamps) // 2]
    return (
        text,
        truth_text,
        Pictures(frames=views.boxed_frames(result, [middle], ["frame"], [box], [truth])),
    )


def _blank(_options: tuple[str, ...], _meta: VideoMeta) -> tuple[Answer, dict[str, Any]]:
    return (BoxAnswer(NO_BOX), {})


def _prediction(text: str, _options: tuple[str, ...]) -> dict[str, Any]:
    return {"box": parsing.parse_box(text)}


FAMILY_DEMOS.register(
    "spatial_grounding",
    DemoParts("spatial grounding", PLACEHOLDER, EXPECTED, _blank, _prediction, spatial_view),
)
