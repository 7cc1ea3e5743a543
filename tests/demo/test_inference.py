"""Asking the model: answer parsing, records for typed questions, video checks, one real ask."""

from __future__ import annotations

import pytest

from videorl.data.families import Family
from videorl.data.prompts import build_prompt
from videorl.demo.examples import demo_families
from videorl.demo.inference import (
    Question,
    Settings,
    ask,
    check_length,
    parse_prediction,
    probe_duration,
    question_record,
)
from videorl.errors import DataError, MediaError
from videorl.tasks.spatio_temporal_grounding.parsing import parse_spatio_temporal
from videorl.tasks.tracking.demo import MAX_TRACKED_FRAMES, tracked_frames
from videorl.tasks.tracking.parsing import parse_tracking
from videorl.video.meta import VideoMeta

TG, SG, TRK, STG, QA = (
    Family("temporal_grounding"),
    Family("spatial_grounding"),
    Family("tracking"),
    Family("spatio_temporal_grounding"),
    Family("video_qa"),
)


def meta(duration: float, fps: float = 8.0) -> VideoMeta:
    return VideoMeta(
        source_fps=fps,
        duration=duration,
        frame_indices=(0,),
        timestamps=(0.0,),
        fps=2.0,
        width=56,
        height=56,
        source_width=96,
        source_height=64,
    )


def test_parse_temporal_answer_and_reasoning():
    response = "<think>the circle shows at 2.5</think><answer>2.5 to 7</answer>"
    prediction = parse_prediction(TG, response)
    assert prediction.window == (2.5, 7.0) and prediction.reasoning == "the circle shows at 2.5"
    assert prediction.parsed
    lenient = parse_prediction(TG, "3 to 4.5")  # no tags: the whole reply is the payload
    assert lenient.window == (3.0, 4.5) and lenient.reasoning is None


@pytest.mark.parametrize(
    "response",
    ["", "| and and and", "<answer>soon</answer>", "<answer>\ufffd\ufffd>1\ufffd>1</answer>"],
)
def test_gibberish_has_no_parsed_answer(response):
    """The last: the demo once showed "Answer: 1 s to 1 s" for it."""
    prediction = parse_prediction(TG, response)
    assert prediction.window is None and not prediction.parsed


@pytest.mark.parametrize(
    ("family", "response", "options"),
    [
        (TG, "<answer>7 to 2</answer>", ()),  # reversed ends are swapped
        (TG, "<think>hm</think>It is from 0:02.5 to 0:07 seconds.", ()),
        (SG, '```json\n[{"bbox_2d": [30, 40, 1, 2]}]\n```', ()),  # untagged, swapped corners
        (TRK, '<answer>{"4": [1, 2, 3, 4]}</answer>', ()),  # bare {frame: box}
        (STG, '<answer>{"time": "1 to 3", "boxes": {"2": [0, 0, 9, 9]}}</answer>', ()),
        (QA, "<answer>The answer is (C)</answer>", ("red", "green", "blue")),
        (QA, "<answer>blue</answer>", ("red", "green", "blue")),  # an option's text
    ],
)
def test_demo_reads_answers_as_eval_scores_them(family, response, options):
    """One lenient parser: the demo shows what `videorl eval` would score."""
    from videorl.eval import parsing

    text = parsing.answer_text(response)
    prediction = parse_prediction(family, response, options)
    assert prediction.parsed
    if family == TG:
        assert prediction.window == parsing.parse_window(text)
    elif family == SG:
        assert prediction.box == parsing.parse_box(text) == (1, 2, 30, 40)
    elif family == TRK:
        assert prediction.boxes == parse_tracking(text)
    elif family == STG:
        found = parse_spatio_temporal(text)
        assert (prediction.window, prediction.boxes) == (found.window, found.boxes)
    else:
        assert prediction.letter == parsing.parse_choice(text, options) == "C"


def test_parse_box_boxes_and_letter():
    assert parse_prediction(SG, "<answer>[1, 2, 30, 40]</answer>").box == (1, 2, 30, 40)
    assert parse_prediction(SG, '<answer>{"bbox_2d": [1, 2, 3, 4]}</answer>').box == (1, 2, 3, 4)
    tracked = parse_prediction(
        TRK, '<answer>{"boxes": {"4": [1, 2, 3, 4], "8.0": [5, 6, 7, 8]}}</answer>'
    )
    assert tracked.boxes == {4.0: (1, 2, 3, 4), 8.0: (5, 6, 7, 8)}
    grounded = parse_prediction(
        STG, '<answer>{"time": [1, 3], "boxes": {"2": [0, 0, 9, 9]}}</answer>'
    )
    assert grounded.window == (1.0, 3.0) and grounded.boxes == {2.0: (0, 0, 9, 9)}
    assert parse_prediction(QA, "<answer>(B)</answer>").letter == "B"
    assert parse_prediction(QA, "<answer>B or C</answer>").letter is None


@pytest.mark.parametrize("family", demo_families())
def test_typed_question_becomes_the_training_prompt(family):
    options = ("red", "blue") if family == QA else ()
    record = question_record(Question(family, "  the red circle ", options), "/v.mp4", meta(6.0))
    assert record.problem == "the red circle" and record.family == family
    assert (record.width, record.height, record.duration) == (96, 64, 6.0)
    prompt = build_prompt(record, think=True)
    assert "the red circle" in prompt and "<think>" in prompt
    if family == TRK:
        assert "frames 4 (0.5 s)" in prompt  # boxes asked every 0.5 s of the 8 fps source
    if family == QA:
        assert "A. red\nB. blue" in prompt


def test_typed_question_errors_say_what_to_fix():
    with pytest.raises(DataError, match="type a query"):
        question_record(Question(TG, "  "), "/v.mp4", meta(6.0))
    with pytest.raises(DataError, match="2 to 8 options"):
        question_record(Question(QA, "which colour?", ("red",)), "/v.mp4", meta(6.0))


def test_tracked_frames_every_half_second_at_most_eight():
    assert tracked_frames(meta(2.0, fps=8)) == [4, 8, 12]
    long = tracked_frames(meta(10.0, fps=30))  # 19 candidates: 15, 30, ..., 285
    assert len(long) == MAX_TRACKED_FRAMES and long[0] == 15 and long[-1] == 285
    assert long == sorted(set(long)) and all(f % 15 == 0 for f in long)
    assert tracked_frames(meta(0.3, fps=10)) == [2]


def test_too_long_and_broken_videos_are_refused_with_a_message(make_video, tmp_path):
    path = make_video(3.0)
    assert probe_duration(path) == pytest.approx(3.0, abs=0.2)
    check_length(path, max_duration=10.0)
    with pytest.raises(MediaError, match=r"lasts 3 s, longer than the demo's limit of 2 s"):
        check_length(path, max_duration=2.0)
    broken = tmp_path / "broken.mp4"
    broken.write_bytes(b"not a video" * 50)
    with pytest.raises(MediaError, match="corrupt or not a video"):
        check_length(str(broken), max_duration=10.0)


def test_settings_check_generation_values():
    assert Settings(greedy=True, temperature=0.0).sampling().temperature == 0.0
    assert Settings(greedy=False, temperature=0.7).sampling().temperature == 0.7
    with pytest.raises(DataError, match="positive temperature"):
        Settings(greedy=False, temperature=0.0).sampling()


@pytest.mark.slow
def test_ask_the_tiny_model_about_an_example_and_a_typed_question(tiny_loaded, examples):
    example = next(e for e in examples if e.record.family == TG)
    settings = Settings(max_new_tokens=8, max_frames=4)
    asked = ask(
        tiny_loaded,
        example.video_path,
        Question(TG, example.record.problem),
        settings,
        example.record,
    )
    assert asked.has_truth and asked.record is example.record
    assert 1 <= asked.video.frames.shape[0] <= 4
    assert isinstance(asked.prediction.response, str)
    typed = ask(tiny_loaded, example.video_path, Question(TG, "the screen is empty"), settings)
    assert not typed.has_truth and typed.record.problem == "the screen is empty"
    assert typed.record.duration == pytest.approx(example.record.duration, abs=0.2)
