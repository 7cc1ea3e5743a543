"""`videorl score`: score a JSONL dump of responses against a JSONL of records."""

import json

import pytest

from videorl.errors import DataError
from videorl.rewards import RewardConfig, score_file, serialize_annotation

from .factories import all_records

CONFIG = RewardConfig(num_workers=1)


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.fixture
def records_path(tmp_path):
    return write_jsonl(tmp_path / "records.jsonl", [r.to_dict() for r in all_records().values()])


def test_scores_and_writes_components(tmp_path, records_path):
    records = all_records()
    responses = [{"id": r.id, "response": serialize_annotation(r)} for r in records.values()]
    responses.append({"id": records["qa"].id, "text": "<answer>A</answer>"})  # `text` alias, wrong
    responses_path = write_jsonl(tmp_path / "responses.jsonl", responses)
    out = tmp_path / "out" / "scores.jsonl"
    summary = score_file(records_path, responses_path, out, CONFIG)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == summary["scored"] == len(records) + 1
    assert [row["overall"] for row in rows] == [1.0] * len(records) + [0.0]
    assert rows[0]["components"]["format"] == 1.0 and rows[0]["error"] is None
    assert rows[-1]["family"] == "video_qa"
    assert summary["families"]["video_qa"] == {"count": 3, "mean": pytest.approx(2 / 3)}
    assert summary["failed"] == {"exception": 0, "timeout": 0, "crash": 0}


def test_without_output_file(tmp_path, records_path):
    record = all_records()["tg"]
    responses = write_jsonl(
        tmp_path / "r.jsonl", [{"id": record.id, "response": "<answer>2.5 to 7</answer>"}]
    )
    assert score_file(records_path, responses, None, CONFIG)["mean"] == 1.0


@pytest.mark.parametrize(
    "line, message",
    [
        (
            '{"id": "nope", "response": "x"}',
            r"r.jsonl:1: record id 'nope' is not in the records file",
        ),
        ('{"id": "qa"}', r"r.jsonl:1: 'response' \(or 'text'\) must be a string"),
        ("{broken", r"r.jsonl:1: invalid JSON"),
        ('["qa", "x"]', r"r.jsonl:1: expected an object"),
    ],
)
def test_response_file_errors(tmp_path, records_path, line, message):
    responses = tmp_path / "r.jsonl"
    responses.write_text(line + "\n")
    with pytest.raises(DataError, match=message):
        score_file(records_path, responses, None, CONFIG)


def test_record_file_errors(tmp_path):
    bad = tmp_path / "records.jsonl"
    bad.write_text(
        '{"id": "a", "family": "video_qa", "problem": "q", "answer": {"letter": "Z"}, "video": "v.mp4"}\n'
    )
    with pytest.raises(DataError, match=r"records.jsonl:1: answer.letter"):
        score_file(bad, bad, None, CONFIG)
    record = all_records()["qa"].to_dict()
    dup = write_jsonl(tmp_path / "dup.jsonl", [record, record])
    with pytest.raises(DataError, match=r"dup.jsonl:2: record id 'qa' already on line 1"):
        score_file(dup, dup, None, CONFIG)
    with pytest.raises(DataError, match="no such file"):
        score_file(tmp_path / "missing.jsonl", dup, None, CONFIG)
