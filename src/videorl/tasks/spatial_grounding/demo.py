"""What the web demo shows of spatial grounding."""

from __future__ import annotations

from videorl.data.records import BoxAnswer
from videorl.demo import views
from videorl.demo.inference import Result
from videorl.demo.parts import FAMILY_DEMOS, DemoParts, Pictures
from videorl.eval import parsing
from videorl.tasks.common import NO_BOX


def spatial_view(result: Result) -> tuple[str, str, Pictures]:
    box = result.prediction.box
    answer = result.record.answer
    assert isinstance(answer, BoxAnswer)
    truth = answer.box if result.has_truth else None
    text = f"box {views.box_text(box)}" if box else ""
    truth_text = f"box {views.box_text(truth)}" if truth else ""
    middle = result.video.meta.timestamps[len(result.video.meta.timestamps) // 2]
    return (
        text,
        truth_text,
        Pictures(frames=views.boxed_frames(result, [middle], ["frame"], [box], [truth])),
    )


FAMILY_DEMOS.register(
    "spatial_grounding",
    DemoParts(
        label="spatial grounding",
        placeholder="the object to locate, e.g. the blue square",
        expected="<answer>[x1, y1, x2, y2]</answer>",
        blank=lambda options, meta: (BoxAnswer(NO_BOX), {}),
        parse=lambda text, options: {"box": parsing.parse_box(text)},
        view=spatial_view,
    ),
)
