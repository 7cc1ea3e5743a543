"""What the demo shows for hand-made answers, and the bundled examples it shows them on."""

from __future__ import annotations

import torch

from videorl.data.families import Family
from videorl.data.records import (
    BoxAnswer,
    ChoiceAnswer,
    MediaRef,
    TaskRecord,
    TemporalAnswer,
    TrackingAnswer,
)
from videorl.demo.examples import demo_families, family_label
from videorl.demo.inference import Result, parse_prediction
from videorl.demo.render import (
    FRAME_HEIGHT,
    MODEL,
    TILE_GAP,
    TITLE_HEIGHT,
    TRUTH,
    lane_rows,
    timeline_x,
)
from videorl.demo.views import build_view
from videorl.video.decode import DecodedVideo, VideoConfig, decode_video
from videorl.video.meta import VideoMeta

SIDE = 32  # frames of the fake video: 32 x 32, from a 64 x 64 source (boxes in source pixels)


def fake_video(seconds: float = 4.0, fps: float = 2.0) -> DecodedVideo:
    """Black frames sampled at `fps` from an 8 fps, 64 x 64 source."""
    count = int(seconds * fps)
    times = tuple(k / fps for k in range(count))
    meta = VideoMeta(
        source_fps=8.0,
        duration=seconds,
        frame_indices=tuple(int(t * 8) for t in times),
        timestamps=times,
        fps=fps,
        width=SIDE,
        height=SIDE,
        source_width=64,
        source_height=64,
    )
    return DecodedVideo(torch.zeros(count, 3, SIDE, SIDE, dtype=torch.uint8), meta)


def result(family: Family, answer, response: str, truth: bool = True, **fields) -> Result:
    record = TaskRecord(
        id="t",
        family=family,
        problem="the red circle",
        answer=answer,
        video=MediaRef(path="/v.mp4"),
        duration=4.0,
        width=64,
        height=64,
        **fields,
    )
    return Result(record, fake_video(), parse_prediction(family, response), truth)


def test_temporal_answer_on_the_timeline_with_frames_from_inside_it():
    view = build_view(
        result(
            Family("temporal_grounding"), TemporalAnswer(((1.0, 2.0),)), "<answer>2 to 3</answer>"
        ),
        think=False,
    )
    assert "**Answer:** 2 s to 3 s" in view.answer
    assert "**Ground truth:** 1 s to 2 s" in view.answer and "reward **0.00**" in view.answer
    timeline = view.pictures.timeline
    model_row, truth_row = sum(lane_rows(0)) // 2, sum(lane_rows(1)) // 2
    assert timeline.getpixel((round(timeline_x(2.5, 4.0)), model_row)) == MODEL
    assert timeline.getpixel((round(timeline_x(1.5, 4.0)), truth_row)) == TRUTH
    # frames at 2, 2.5 and 3 s are inside [2, 3]: three square tiles
    assert view.pictures.frames.width == 3 * FRAME_HEIGHT + 2 * TILE_GAP


def test_unparseable_answer_says_so_and_still_shows_the_truth():
    view = build_view(
        result(Family("temporal_grounding"), TemporalAnswer(((1.0, 2.0),)), "| and and and"),
        think=False,
    )
    assert view.answer.startswith("**No parseable answer.**") and "S to E" in view.answer
    assert "**Ground truth:** 1 s to 2 s" in view.answer
    assert view.response == "| and and and" and "no <think> block" in view.reasoning
    assert view.pictures.frames is not None  # frames from the true segment


def test_typed_question_shows_no_ground_truth():
    view = build_view(
        result(
            Family("temporal_grounding"),
            TemporalAnswer(((0.0, 0.0),)),
            "<answer>1 to 2</answer>",
            truth=False,
        ),
        think=False,
    )
    assert "Ground truth" not in view.answer and "reward" not in view.answer
    colours = {c for _, c in view.pictures.timeline.getcolors(maxcolors=100_000)}
    assert MODEL in colours and TRUTH not in colours


def test_spatial_boxes_drawn_on_the_frame_in_source_pixels():
    view = build_view(
        result(
            Family("spatial_grounding"),
            BoxAnswer((0, 0, 32, 32)),
            "<answer>[32, 32, 64, 64]</answer>",
        ),
        think=False,
    )
    assert "**Answer:** box [32, 32, 64, 64]" in view.answer
    frame = view.pictures.frames  # one tile: the 64 px source maps to FRAME_HEIGHT px
    half = FRAME_HEIGHT // 2
    assert frame.getpixel((half, TITLE_HEIGHT + half + 20)) == MODEL  # the model box's left edge
    assert frame.getpixel((half + 20, TITLE_HEIGHT + half + 20)) == (0, 0, 0)
    assert frame.getpixel((0, TITLE_HEIGHT + 20)) == TRUTH  # the truth box's left edge


def test_tracking_boxes_on_the_frames_of_their_keys():
    answer = TrackingAnswer({"4": (0, 0, 16, 16), "8": (0, 0, 16, 16)})
    response = '<answer>{"boxes": {"4": [0, 0, 16, 16]}}</answer>'
    view = build_view(
        result(Family("tracking"), answer, response, extra={"source_fps": 8}), think=False
    )
    assert "**Answer:** boxes in 1 frames" in view.answer and "reward **0.50**" in view.answer
    assert view.pictures.frames.width == 2 * FRAME_HEIGHT + TILE_GAP  # frames 4 and 8


def test_choice_highlighted_among_the_options():
    view = build_view(
        result(
            Family("video_qa"), ChoiceAnswer("B"), "<answer>B</answer>", options=("red", "blue")
        ),
        think=False,
    )
    assert "**Answer:** B. blue" in view.answer and "reward **1.00**" in view.answer
    assert 'class="option chosen correct" data-letter="B"' in view.pictures.options  # type: ignore[operator]  # set here: a None fails the test too
    assert view.pictures.timeline is None


def test_examples_cover_the_demo_families_as_decodable_videos(examples):
    assert {e.record.family for e in examples} == set(demo_families())
    assert len({e.label for e in examples}) == len(examples)
    for example in examples:
        assert example.video_path.endswith(".mp4") and example.record.image is None
        assert example.label.startswith(family_label(example.record.family))
    still = next(e for e in examples if e.record.family == Family("spatial_grounding"))
    video = decode_video(still.video_path, VideoConfig(max_frames=4))
    assert video.meta.duration == still.record.duration == 2.0
