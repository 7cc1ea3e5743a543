"""Routing a response to its family's metric, statuses, and per-family summaries."""

import pytest

from videorl.data.families import Family
from videorl.data.records import record_from_dict
from videorl.eval.scoring import MISSING_MEDIA, NO_PREDICTION, OK, UNPARSED, score_record, summarize


def _record(family, answer, **fields):
    data = {
        "id": fields.pop("id", "r1"),
        "family": family,
        "problem": "q",
        "answer": answer,
        "video": {"path": "v.mp4"},
    }
    data.update(fields)
    return record_from_dict(data)


@pytest.mark.parametrize(
    "family, answer, fields, response, score",
    [
        (
            "temporal_grounding",
            {"windows": [[2, 6]]},
            {"duration": 10},
            "It is from 3 to 7 s.",
            0.6,
        ),
        ("spatial_grounding", {"box": [0, 0, 10, 10]}, {}, "[0, 0, 10, 8]", 0.8),
        (
            "tracking",
            {"boxes": {"0": [0, 0, 10, 10], "5": [0, 0, 10, 10]}},
            {},
            '{"boxes": {"0": [0, 0, 10, 10]}}',
            0.5,
        ),
        (
            "spatio_temporal_grounding",
            {"time": [2, 6], "boxes": {"2": [0, 0, 10, 10]}},
            {"duration": 10},
            '{"time": [3, 7], "boxes": {"2": [0, 0, 10, 10]}}',
            (0.6 + 1.0) / 2,
        ),
        ("video_qa", {"letter": "B"}, {"options": ["cat", "dog"]}, "The answer is dog.", 1.0),
        ("spatial_intelligence", {"value": 10}, {"subtype": "abs_distance"}, "12 meters", 0.7),
        (
            "segmentation",
            {"box": [2, 2, 6, 6], "positive_points": [], "negative_points": []},
            {"width": 10, "height": 10},
            '{"boxes": [3, 2, 7, 6]}',
            0.6,
        ),
    ],
)
def test_each_family_is_scored(family, answer, fields, response, score):
    result = score_record(_record(family, answer, **fields), f"<answer>{response}</answer>")
    assert result.status == OK
    assert result.score == pytest.approx(score)


def test_math_uses_the_boxed_answer():
    record = record_from_dict(
        {"id": "m", "family": "math", "problem": "1+6?", "answer": {"text": "7"}}
    )
    assert score_record(record, "so \\boxed{7}").score == 1.0
    assert score_record(record, "\\boxed{8}").score == 0.0


def test_statuses_and_denominator():
    record = _record("temporal_grounding", {"windows": [[2, 6]]}, duration=10)
    results = [
        score_record(record, "2 to 6"),
        score_record(record, "no idea"),
        score_record(record, None),
        score_record(record, None, status=MISSING_MEDIA),
    ]
    assert [r.status for r in results] == [OK, UNPARSED, NO_PREDICTION, MISSING_MEDIA]
    summary = summarize(results)[Family("temporal_grounding")]
    assert summary.n == 4
    assert summary.metrics["R1@0.5"] == pytest.approx(25.0)  # 1 of 4, nothing dropped
    assert summary.counts == {
        "ok": 1,
        "unparsed": 1,
        "missing_media": 1,
        "media_error": 0,
        "no_prediction": 1,
    }


def test_breakdowns_by_subtype_and_video_length():
    short = _record(
        "temporal_grounding", {"windows": [[2, 6]]}, duration=10, subtype="move", id="a"
    )
    long = _record(
        "temporal_grounding", {"windows": [[2, 6]]}, duration=100, subtype="appear", id="b"
    )
    summary = summarize([score_record(short, "2 to 6"), score_record(long, "")])[
        Family("temporal_grounding")
    ]
    assert summary.breakdowns["subtype"]["move"]["R1@0.5"] == 100.0
    assert summary.breakdowns["subtype"]["appear"]["R1@0.5"] == 0.0
    assert set(summary.breakdowns["video_length"]) == {"<30 s", "60-120 s"}


def test_macro_accuracy_over_question_types():
    def qa(i, kind, letter):
        return score_record(
            _record("video_qa", {"letter": "A"}, options=["x", "y"], subtype=kind, id=str(i)),
            letter,
        )

    results = [qa(0, "count", "A"), qa(1, "count", "B"), qa(2, "count", "B"), qa(3, "color", "A")]
    metrics = summarize(results)[Family("video_qa")].metrics
    assert metrics == pytest.approx({"accuracy": 50.0, "macro_accuracy": (100 / 3 + 100) / 2})
