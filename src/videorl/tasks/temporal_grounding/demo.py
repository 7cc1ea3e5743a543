"""What the web demo shows of temporal grounding."""

from __future__ import annotations

from typing import Any

from videorl.data.records import TemporalAnswer
from videorl.demo import render, views
from videorl.demo.inference import Result
from videorl.demo.parts import FAMILY_DEMOS, DemoParts, Pictures
from videorl.eval import parsing
from videorl.video.meta import VideoMeta

# the query box's hint, and the answer format named when a reply does not parse
PLACEHOLDER = "the moment to find, e.g. the red circle is visible"
EXPECTED = "<answer>S to E</answer>"


def _blank(_options: tuple[str, ...], _meta: VideoMeta) -> tuple[TemporalAnswer, dict[str, Any]]:
    return TemporalAnswer(((0.0, 0.0),)), {}


def temporal_view(result: Result) -> tuple[str, str, Pictures]:
    answer = result.record.answer_as(TemporalAnswer)
    window = result.prediction.window
    truth = answer.windows if result.has_truth else ()
    text = views.window_text(window) if window else ""
    truth_text = views.window_text(truth[0]) if truth else ""
    duration = result.record.duration or result.video.meta.duration
    shown, where = (
        (window, "the model's segment")
        if window
        else (truth[0], "the true segment (no answer)")
        if truth
        else (None, "the video (no answer)")
    )
    pictures = Pictures(
        timeline=render.draw_timeline(duration, window, truth),
        frames=views.keyframes(result, shown, f"Frames from {where}"),
    )
    return text, truth_text, pictures


def _prediction(text: str, _options: tuple[str, ...]) -> dict[str, Any]:
    return {"window": parsing.parse_window(text)}


FAMILY_DEMOS.register(
    "temporal_grounding",
    DemoParts("temporal grounding", PLACEHOLDER, EXPECTED, _blank, _prediction, temporal_view),
)
