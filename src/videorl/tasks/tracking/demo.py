"""What the web demo shows of tracking."""

from __future__ import annotations

from typing import Any

import numpy as np

from videorl.data.records import TrackingAnswer
from videorl.demo import views
from videorl.demo.inference import Result
from videorl.demo.parts import FAMILY_DEMOS, DemoParts, Pictures
from videorl.tasks.common import NO_BOX
from videorl.tasks.tracking.parsing import parse_tracking
from videorl.video.meta import VideoMeta

# the query box's hint, and the answer format named when a reply does not parse
PLACEHOLDER = "the object to track, e.g. the green circle"
EXPECTED = '<answer>{"boxes": {"<frame>": [x1, y1, x2, y2]}}</answer>'
MAX_TRACKED_FRAMES = 8  # frames a typed tracking question asks boxes for
TRACK_EVERY_S = 0.5


def tracked_frames(meta: VideoMeta) -> list[int]:
    """Source frames every 0.5 s after frame 0, at most `MAX_TRACKED_FRAMES`, evenly spread."""
    total = max(1, round(meta.duration * meta.source_fps))
    step = max(1, round(meta.source_fps * TRACK_EVERY_S))
    frames = list(range(step, total, step)) or [total - 1]
    if len(frames) > MAX_TRACKED_FRAMES:
        picks = np.linspace(0, len(frames) - 1, MAX_TRACKED_FRAMES).round().astype(int)
        frames = [frames[i] for i in picks]
    return frames


def _blank(_options: tuple[str, ...], meta: VideoMeta) -> tuple[TrackingAnswer, dict[str, Any]]:
    """Boxes asked for in the demo's tracked frames of the uploaded video."""
    boxes = {str(f): NO_BOX for f in tracked_frames(meta)}
    return TrackingAnswer(boxes), {"extra": {"source_fps": meta.source_fps}}


def _prediction(text: str, _options: tuple[str, ...]) -> dict[str, Any]:
    tracked = parse_tracking(text) or {}
    return {"boxes": {k: b for k, b in tracked.items() if isinstance(k, float)}}


def tracking_view(result: Result) -> tuple[str, str, Pictures]:
    answer = result.record.answer_as(TrackingAnswer)
    fps = float(result.record.extra.get("source_fps") or result.video.meta.source_fps)
    predicted = result.prediction.boxes
    truth = views.truth_boxes(result, answer.boxes)
    text = f"boxes in {len(predicted)} frames" if predicted else ""
    truth_text = f"boxes in {len(truth)} frames" if truth else ""
    frames = views.keyed_frames(result, predicted, truth, 1 / fps, "frame")
    return (
        text,
        truth_text,
        Pictures(frames=frames or views.keyframes(result, None, views.NO_BOXES_TITLE)),
    )


FAMILY_DEMOS.register(
    "tracking", DemoParts("tracking", PLACEHOLDER, EXPECTED, _blank, _prediction, tracking_view)
)
