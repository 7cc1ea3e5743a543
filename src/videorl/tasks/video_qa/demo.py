"""What the web demo shows of video qa."""

from __future__ import annotations

from typing import Any

from videorl.data.records import LETTERS, ChoiceAnswer
from videorl.demo import render, views
from videorl.demo.inference import Result
from videorl.demo.parts import FAMILY_DEMOS, DemoParts, Pictures
from videorl.errors import DataError
from videorl.tasks.common import choice_prediction
from videorl.video.meta import VideoMeta

# the query box's hint, and the answer format named when a reply does not parse
PLACEHOLDER = "the question, e.g. What colour is the square?"
EXPECTED = "<answer>X</answer> with an option letter"


def _blank(options: tuple[str, ...], _meta: VideoMeta) -> tuple[ChoiceAnswer, dict[str, Any]]:
    given = tuple(o.strip() for o in options if o.strip())
    if not 2 <= len(given) <= len(LETTERS):
        raise DataError(
            f"video QA needs 2 to {len(LETTERS)} options, one per line (got {len(given)})"
        )
    return ChoiceAnswer("A"), {"options": given}


def choice_view(result: Result) -> tuple[str, str, Pictures]:
    letter, options = result.prediction.letter, result.record.options
    answer = result.record.answer
    correct = answer.letter if result.has_truth and isinstance(answer, ChoiceAnswer) else None
    pictures = Pictures(
        frames=views.keyframes(result, None, "Frames across the video"),
        options=render.options_html(options, letter, correct),
    )
    return views.option_text(letter, options), views.option_text(correct, options), pictures


FAMILY_DEMOS.register(
    "video_qa",
    DemoParts(
        "video QA", PLACEHOLDER, EXPECTED, _blank, choice_prediction, choice_view, options=True
    ),
)
