"""Lenient evaluation parsing: what it accepts that the strict training parser rejects."""

import pytest

from videorl.eval import parsing
from videorl.tasks.spatio_temporal_grounding.parsing import parse_spatio_temporal
from videorl.tasks.temporal_grounding import reward as temporal_grounding
from videorl.tasks.tracking.parsing import parse_tracking


@pytest.mark.parametrize(
    "response, expected",
    [
        ("<answer>2.5 to 7</answer>", (2.5, 7.0)),
        ("The event happens from 2.5 to 7 seconds.", (2.5, 7.0)),
        ("2.5-7", (2.5, 7.0)),
        ("[2.5, 7]", (2.5, 7.0)),
        ("between 2.5s and 7s", (2.5, 7.0)),
        ("2.5 seconds - 7 seconds", (2.5, 7.0)),
        ("from 0:02.5 to 1:07", (2.5, 67.0)),
        ("7 to 2.5", (2.5, 7.0)),  # reversed ends are swapped
        ("<think>maybe 1 to 2</think>The answer: 4 to 9", (4.0, 9.0)),
        ("<answer>3 to 8", (3.0, 8.0)),  # unclosed answer tag
        ("start 3, end 8", (3.0, 8.0)),  # first two times
        ("<answer>2.5 -> 7</answer>", (2.5, 7.0)),  # an arrow is not tag debris
        ("<answer>2.5 to\n7</answer>", (2.5, 7.0)),
    ],
)
def test_window_lenient_forms(response, expected):
    assert parsing.parse_window(parsing.answer_text(response)) == expected


@pytest.mark.parametrize("payload", ["2.5-7", "[2.5, 7]", "from 2.5 to 7 seconds"])
def test_lenient_and_strict_parsers_are_separate(payload):
    assert temporal_grounding.parse(payload) is None  # training: format matters
    assert parsing.parse_window(payload) == (2.5, 7.0)  # evaluation: the answer matters


@pytest.mark.parametrize(
    "response",
    [
        "",
        "no idea",
        "at 5 seconds",
        None,
        "<answer>\ufffd\ufffd>1\ufffd>1</answer>",  # a tiny model's broken bytes around a 1
        "<answer>>1 >1</answer>",  # tag debris
        "<answer>1<1</answer>",
        "<answer>2 to 7\x00</answer>",  # a control character
    ],
)
def test_window_unreadable(response):
    assert parsing.parse_window(parsing.answer_text(response)) is None


@pytest.mark.parametrize(
    "text, expected",
    [
        ('{"bbox_2d": [1, 2, 3, 4]}', (1.0, 2.0, 3.0, 4.0)),
        ('```json\n[{"bbox_2d": [1, 2, 3, 4], "label": "cat"}]\n```', (1.0, 2.0, 3.0, 4.0)),
        ("The box is [10, 20, 5, 40].", (5.0, 20.0, 10.0, 40.0)),  # corners sorted
        ("(10, 20), (30, 40)", (10.0, 20.0, 30.0, 40.0)),
        ('{"box": [0.5, 0.5, 2, 2]}', (0.5, 0.5, 2.0, 2.0)),
        ("three numbers 1 2 3", None),
    ],
)
def test_box(text, expected):
    assert parsing.parse_box(text) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("B", "B"),
        ("(C)", "C"),
        ("C. blue square", "C"),
        ("The answer is D.", "D"),
        ("Option (B) fits best", "B"),
        ("I think B) is right", "B"),
        ("red circle", "A"),  # the option text
        ("It is the Blue Square.", "B"),
        ("E", None),  # beyond the four options
        ("A or B", None),
        ("something else", None),
    ],
)
def test_choice(text, expected):
    assert parsing.parse_choice(text, ("red circle", "blue square", "green", "yellow")) == expected


@pytest.mark.parametrize(
    "text, expected",
    [("3", 3.0), ("about 1,200 m", 1200.0), ("-2.5", -2.5), ("three chairs", 3.0), ("none", None)],
)
def test_number(text, expected):
    assert parsing.parse_number(text) == expected


def test_tracking_and_spatio_temporal():
    boxes = parse_tracking('{"boxes": {"0": [1, 2, 3, 4], "5.0": [1, 1, 2, 2]}}')
    assert boxes == {0.0: (1.0, 2.0, 3.0, 4.0), 5.0: (1.0, 1.0, 2.0, 2.0)}
    assert parse_tracking('{"3": [0, 0, 1, 1]}') == {3.0: (0.0, 0.0, 1.0, 1.0)}
    assert parse_tracking("no boxes") is None
    stg = parse_spatio_temporal('{"time": "1 to 3", "boxes": {"1": [0, 0, 1, 1]}}')
    assert stg.window == (1.0, 3.0) and stg.boxes == {1.0: (0.0, 0.0, 1.0, 1.0)}
    assert parse_spatio_temporal("from 2 to 4").window == (2.0, 4.0)


def test_adversarial_text_is_bounded():
    text = "[" * 50_000 + "{" * 50_000
    assert parsing.parse_box(text) is None
    assert parsing.parse_window("9" * 200_000) is None
