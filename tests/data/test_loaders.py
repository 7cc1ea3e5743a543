"""Loaders for each annotation format, malformed rows and missing media."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from videorl.data.families import Family
from videorl.data.formats import final_answer
from videorl.data.loaders import (
    check_media,
    load_records,
    media_report,
    require_media,
    write_records,
)
from videorl.data.records import (
    BoxAnswer,
    ChoiceAnswer,
    MathAnswer,
    NumericAnswer,
    TaskRecord,
    TemporalAnswer,
)
from videorl.errors import ConfigError, DataError, MediaError
from videorl.video.media import MediaRef


def jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


VTG_ROWS = [
    {
        "qid": 7,
        "query": "person opens a door",
        "duration": 30.5,
        "vid": "AO8RW",
        "relevant_windows": [[2.0, 8.5]],
    },
    {
        "qid": 8,
        "query": "a dog runs",
        "duration": 120.0,
        "vid": "x",
        "video_file": "clips/x.mp4",
        "relevant_windows": [[50.0, 62.0], [70.0, 75.0]],
        "video_start": 40.0,
        "video_end": 100.0,
    },
]


def test_vtg_benchmark_format(tmp_path):
    result = load_records(jsonl(tmp_path / "charades.jsonl", VTG_ROWS), video_root=tmp_path / "v")
    assert result.format == "vtg" and result.skipped == 0
    plain, clipped = result.records
    assert plain.id == "7" and plain.family == Family("temporal_grounding")
    assert plain.problem == "person opens a door" and plain.duration == 30.5
    assert plain.answer == TemporalAnswer(((2.0, 8.5),))
    assert plain.video.path == str(tmp_path / "v" / "AO8RW.mp4")  # vid fallback
    # clip: windows move into the clip's time axis; duration is the clip's
    assert clipped.video == MediaRef(path=str(tmp_path / "v/clips/x.mp4"), start=40.0, end=100.0)
    assert clipped.answer == TemporalAnswer(((10.0, 22.0), (30.0, 35.0)))
    assert clipped.duration == 60.0 and clipped.extra["video_start"] == 40.0


def test_timer1_training_format(tmp_path):
    rows = [
        {
            "video": "/data/a.mp4",
            "duration": 12.0,
            "timestamp": [1.5, 4.0],
            "sentence": " a man sits ",
        }
    ]
    (record,) = load_records(jsonl(tmp_path / "train.jsonl", rows)).records
    assert record.problem == "a man sits" and record.answer == TemporalAnswer(((1.5, 4.0),))
    assert record.video.path == "/data/a.mp4" and record.id == "train-1"


def test_mcq_format_letters_texts_indices_and_numeric_si(tmp_path):
    rows = [
        {
            "id": "q1",
            "video": "a.mp4",
            "question": "What colour?",
            "options": ["A. red", "B. blue"],
            "answer": "B",
        },
        {
            "video_path": "b.mp4",
            "question": "Who?",
            "options": {"A": "cat", "B": "dog", "C": "owl"},
            "answer": "owl",
            "question_type": "object",
        },
        {"video": "c.mp4", "question": "Which?", "choices": ["x", "y", "z"], "answer": 0},
        {
            "video": "d.mp4",
            "question": "How many chairs?",
            "question_type": "object_counting",
            "ground_truth": "4",
        },
    ]
    records = load_records(jsonl(tmp_path / "qa.jsonl", rows)).records
    assert records[0].options == ("red", "blue") and records[0].answer == ChoiceAnswer("B")
    assert records[1].answer == ChoiceAnswer("C") and records[1].subtype == "object"
    assert records[2].answer == ChoiceAnswer("A")
    assert records[3].family == Family("spatial_intelligence") and records[
        3
    ].answer == NumericAnswer(4.0)
    assert records[0].video.path == str(tmp_path / "a.mp4")


def test_math_jsonl_and_parquet(tmp_path):
    rows = [
        {"problem": "1/2 of 1?", "solution": "It is $\\boxed{\\frac{1}{2}}$."},
        {
            "prompt": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "6*7?"},
            ],
            "reward_model": {"ground_truth": "42", "style": "rule"},
            "data_source": "dapo",
        },
        {"question": "Tom has 3 + 4 apples.", "answer": "3 + 4 = 7\n#### 7"},
    ]
    records = load_records(jsonl(tmp_path / "math.jsonl", rows)).records
    assert [r.answer for r in records] == [
        MathAnswer("\\frac{1}{2}"),
        MathAnswer("42"),
        MathAnswer("7"),
    ]
    assert records[1].problem == "6*7?" and records[1].source == "dapo"
    assert all(r.family == Family("math") and r.media is None for r in records)
    table = pa.Table.from_pylist(
        [{"prompt": "2+2?", "answer": "4"}, {"prompt": "3+3?", "answer": "6"}]
    )
    pq.write_table(table, tmp_path / "math.parquet")
    result = load_records(tmp_path / "math.parquet")
    assert result.format == "math" and [r.answer.text for r in result] == ["4", "6"]


def test_final_answer_keeps_nested_braces():
    assert final_answer("so \\boxed{\\sqrt{2}} and \\boxed{x^{2}}") == "x^{2}"
    assert final_answer("no box") == "no box"


def box_record(rid: str, problem: str, box: tuple, image: str, **fields) -> TaskRecord:
    """A spatial grounding record of an image."""
    return TaskRecord(
        id=rid,
        family=Family("spatial_grounding"),
        problem=problem,
        answer=BoxAnswer(box),
        image=MediaRef(path=image),
        **fields,
    )


def test_generic_records_round_trip_jsonl_and_parquet(tmp_path):
    records = [
        box_record("a", "the cat", (1.0, 2.0, 3.0, 4.0), "img/a.png", width=64, height=48),
        TaskRecord(
            id="b",
            family=Family("temporal_grounding"),
            problem="jump",
            answer=TemporalAnswer(((1.0, 2.0),)),
            video=MediaRef(path="/abs/b.mp4", start=1.0, end=9.0),
            duration=8.0,
        ),
        box_record(
            "c",
            "the dog",
            (0.0, 0.0, 500.0, 1000.0),
            "/abs/c.jpg",
            box_format="norm1000",
            extra={"split": "val"},
        ),
    ]
    for name in ("r.jsonl", "r.parquet"):
        loaded = load_records(write_records(tmp_path / name, records)).records
        assert loaded[0] == TaskRecord(
            **{**records[0].__dict__, "image": MediaRef(path=str(tmp_path / "img/a.png"))}
        )
        assert loaded[1:] == records[1:]


def test_records_format_fills_a_missing_family(tmp_path):
    rows = [{"id": "m", "problem": "2+2", "answer": {"text": "4"}}]
    (record,) = load_records(
        jsonl(tmp_path / "r.jsonl", rows), format="records", family="text_math"
    ).records
    assert record.family == Family("math")


def test_malformed_line_names_file_line_and_field(tmp_path):
    rows = [
        VTG_ROWS[0],
        {**VTG_ROWS[0], "qid": 2, "relevant_windows": [[5, 1]]},
        "{not json",
        VTG_ROWS[1],
    ]
    path = jsonl(tmp_path / "bad.jsonl", rows)
    with pytest.raises(DataError) as err:
        load_records(path)
    message = str(err.value)
    assert f"{path}:2" in message and "line 2" in message and "relevant_windows" in message
    assert "skip_invalid" in message
    result = load_records(path, skip_invalid=True)
    assert len(result) == 2 and result.skipped == 2
    assert (
        "line 2" in result.errors[0]
        and "line 3" in result.errors[1]
        and "invalid JSON" in result.errors[1]
    )


def test_missing_field_and_unknown_family_are_row_errors(tmp_path):
    with pytest.raises(DataError, match=r"line 1.*'duration'"):
        load_records(
            jsonl(tmp_path / "a.jsonl", [{"query": "q", "relevant_windows": [[0, 1]], "vid": "v"}])
        )
    rows = [{"id": "x", "family": "tempral_grounding", "problem": "p", "answer": {}}]
    with pytest.raises(DataError, match=r"line 1.*unknown task family"):
        load_records(jsonl(tmp_path / "b.jsonl", rows))


def test_undetectable_format_and_bad_arguments(tmp_path):
    with pytest.raises(DataError, match="cannot tell the data format.*set data.format to one of"):
        load_records(jsonl(tmp_path / "c.jsonl", [{"foo": 1}]))
    with pytest.raises(ConfigError, match="unknown"):
        load_records(tmp_path / "c.jsonl", format="csv")
    with pytest.raises(DataError, match="not found"):
        load_records(tmp_path / "absent.jsonl")


def test_missing_media_is_reported_with_count_and_first_paths(tmp_path):
    present = tmp_path / "ok.mp4"
    present.write_bytes(b"x")
    (tmp_path / "empty.mp4").write_bytes(b"")
    records = [
        TaskRecord(
            id=str(i),
            family=Family("video_qa"),
            problem="q",
            answer=ChoiceAnswer("A"),
            options=("a", "b"),
            video=MediaRef(path=str(tmp_path / name)),
        )
        for i, name in enumerate(["ok.mp4", "gone1.mp4", "empty.mp4", "gone1.mp4", "gone2.mp4"])
    ]
    missing = check_media(records)
    assert missing == [str(tmp_path / n) for n in ("gone1.mp4", "empty.mp4", "gone2.mp4")]
    report = media_report(missing, 4)
    assert report.startswith("3 of 4 media files are missing or empty") and "gone1.mp4" in report
    with pytest.raises(MediaError, match="3 of 4.*video_root"):
        require_media(records)
    require_media(records[:1])  # all present: no error
