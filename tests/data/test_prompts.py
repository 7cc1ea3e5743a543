"""Per-family prompt templates state the answer formats of docs/methods.md#answer-protocol."""

from __future__ import annotations

from typing import Any

from videorl.data.families import Family
from videorl.data.prompts import NO_THINK, THINK, build_prompt
from videorl.data.records import (
    Answer,
    BoxAnswer,
    ChoiceAnswer,
    MathAnswer,
    MediaRef,
    NumericAnswer,
    SegmentationAnswer,
    SpatioTemporalAnswer,
    TaskRecord,
    TemporalAnswer,
    TrackingAnswer,
)

VIDEO = MediaRef(path="v.mp4")
IMAGE = MediaRef(path="i.png")
BOX = (1.0, 2.0, 3.0, 4.0)
POINTS = ((1.0, 1.0),) * 3


def record(family: Family, answer: Answer, **fields: Any) -> TaskRecord:
    fields.setdefault("video", None if family == Family("math") else VIDEO)
    return TaskRecord(
        id="r",
        family=family,
        problem=fields.pop("problem", "the red square"),
        answer=answer,
        **fields,
    )


def test_protocol_with_and_without_thinking():
    tg = record(Family("temporal_grounding"), TemporalAnswer(((1.0, 2.0),)), duration=12.5)
    thinking, plain = build_prompt(tg, think=True), build_prompt(tg, think=False)
    assert thinking.endswith(THINK) and "<think>" in thinking
    assert plain.endswith(NO_THINK) and "<think>" not in plain
    assert (
        "12.5 seconds" in plain
        and "<answer>S to E</answer>" in plain
        and '"the red square"' in plain
    )


def test_box_families_state_the_coordinate_frame():
    sg = record(
        Family("spatial_grounding"), BoxAnswer(BOX), video=None, image=IMAGE, width=96, height=64
    )
    text = build_prompt(sg, think=False)
    assert "<answer>[x1, y1, x2, y2]</answer>" in text and "pixels of the 96 x 64 image" in text
    norm = record(
        Family("spatial_grounding"), BoxAnswer(BOX), video=None, image=IMAGE, box_format="norm1000"
    )
    assert "normalized to 0-1000" in build_prompt(norm, think=False)


def test_segmentation_asks_for_time_only_on_video():
    answer = SegmentationAnswer(BOX, POINTS, POINTS, time=1.5)
    video = build_prompt(record(Family("segmentation"), answer), think=False)
    image = build_prompt(
        record(Family("segmentation"), answer, video=None, image=IMAGE), think=False
    )
    for text in (video, image):
        assert (
            '"positive_points": [[x, y], [x, y], [x, y]]' in text
            and '"boxes": [x1, y1, x2, y2]' in text
        )
    assert '"time": t' in video and '"time"' not in image


def test_tracking_lists_the_frames_to_answer():
    answer = TrackingAnswer({"12": BOX, "4": BOX, "8": BOX})
    text = build_prompt(
        record(
            Family("tracking"),
            answer,
            extra={"first_box": [5, 6, 15, 16.5], "source_fps": 8},
            width=64,
            height=64,
        ),
        think=False,
    )
    assert "frames 4 (0.5 s), 8 (1 s), 12 (1.5 s)" in text
    assert "In frame 0 it is at [5, 6, 15, 16.5]" in text and '{"boxes": {"<frame>"' in text


def test_spatio_temporal_grid_does_not_reveal_the_window():
    answer = SpatioTemporalAnswer(time=(3.0, 6.0), boxes={"3": BOX, "4": BOX, "5": BOX})
    text = build_prompt(
        record(Family("spatio_temporal_grounding"), answer, duration=8.0), think=False
    )
    assert '{"time": [t0, t1], "boxes": {"<second>"' in text
    assert "1 s grid (0, 1, 2, ...)" in text and "3, 4, 5" not in text
    half = SpatioTemporalAnswer(time=(1.0, 2.0), boxes={"1": BOX, "1.5": BOX})
    assert "0.5 s grid (0, 0.5, 1, ...)" in build_prompt(
        record(Family("spatio_temporal_grounding"), half), think=False
    )


def test_choice_numeric_and_math():
    qa = record(
        Family("video_qa"),
        ChoiceAnswer("B"),
        problem="What colour?",
        options=("red", "blue", "green"),
    )
    text = build_prompt(qa, think=False)
    assert (
        "A. red\nB. blue\nC. green" in text and "(A, B, C)" in text and "<answer>X</answer>" in text
    )
    si = record(Family("spatial_intelligence"), NumericAnswer(3.0), problem="How many?")
    assert "a single number as <answer>N</answer>" in build_prompt(si, think=False)
    math = record(Family("math"), MathAnswer("4"), problem="2+2?")
    assert build_prompt(math, think=True).startswith("2+2?\n") and "\\boxed{" in build_prompt(
        math, think=True
    )
