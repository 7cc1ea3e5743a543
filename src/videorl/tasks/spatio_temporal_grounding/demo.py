"""What the web demo shows of spatio temporal grounding."""

from __future__ import annotations

from typing import Any

from videorl.data.records import Answer, SpatioTemporalAnswer
from videorl.demo import render, views
from videorl.demo.inference import Result
from videorl.demo.parts import FAMILY_DEMOS, DemoParts, Pictures
from videorl.tasks.common import NO_BOX
from videorl.tasks.spatio_temporal_grounding.parsing import parse_spatio_temporal
from videorl.video.meta import VideoMeta

# the query box's hint, and the answer format named when a reply does not parse
PLACEHOLDER = "the object to find in time and space"
EXPECTED = '<answer>{"time": [t0, t1], "boxes": {...}}</answer>'


def _prediction(text: str, _options: tuple[str, ...]) -> dict[str, Any]:
    found = parse_spatio_temporal(text)
    return {} if found is None else {"window": found.window, "boxes": found.boxes}


def spatio_temporal_view(result: Result) -> tuple[str, str, Pictures]:
    answer = result.record.answer_as(SpatioTemporalAnswer)
    window, predicted = result.prediction.window, result.prediction.boxes
    found = ([views.window_text(window)] if window else []) + (
        [f"boxes at {len(predicted)} seconds"] if predicted else []
    )
    truth = views.truth_boxes(result, answer.boxes)
    windows = (answer.time,) if result.has_truth else ()
    truth_text = (
        f"{views.window_text(answer.time)}, boxes at {len(truth)} seconds"
        if result.has_truth
        else ""
    )
    frames = views.keyed_frames(result, predicted, truth, 1.0, "second")
    duration = result.record.duration or result.video.meta.duration
    pictures = Pictures(
        timeline=render.draw_timeline(duration, window, windows),
        frames=frames or views.keyframes(result, None, views.NO_BOXES_TITLE),
    )
    return ", ".join(found), truth_text, pictures


def _blank(_options: tuple[str, ...], _meta: VideoMeta) -> tuple[Answer, dict[str, Any]]:
    return (SpatioTemporalAnswer(time=(0.0, 0.0), boxes={"0": NO_BOX}), {})


FAMILY_DEMOS.register(
    "spatio_temporal_grounding",
    DemoParts(
        "spatio-temporal grounding",
        PLACEHOLDER,
        EXPECTED,
        _blank,
        _prediction,
        spatio_temporal_view,
    ),
)
