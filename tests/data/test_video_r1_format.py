"""`data.format: video_r1`: Video-R1-260k rows (tulerfeng/Video-R1 src/r1-v/src/open_r1/
grpo.py: `problem_type`, `data_type`, `options`, `solution` = `<answer>X</answer>`, `path`)."""

from __future__ import annotations

import json

import pytest

from videorl.data.families import Family
from videorl.data.loaders import load_records
from videorl.data.records import ChoiceAnswer, NumericAnswer
from videorl.errors import DataError

ROWS = [
    {
        "problem_id": 1,
        "problem": "What colour is the ball?",
        "data_type": "image",
        "problem_type": "multiple choice",
        "options": ["A. red", "B. blue", "C. green"],
        "process": "",
        "solution": "<answer>B</answer>",
        "path": "./images/a.png",
        "data_source": "CLEVR",
    },
    {
        "problem_id": 2,
        "problem": "Which happens first?",
        "data_type": "video",
        "problem_type": "multiple choice",
        "options": ["A. jump", "B. run"],
        "solution": "<answer> A </answer>",
        "path": "./videos/b.mp4",
    },
    {
        "problem_id": 3,
        "problem": "How many chairs are there?",
        "data_type": "video",
        "problem_type": "numerical",
        "solution": "<answer>1,200</answer>",
        "path": "./videos/c.mp4",
    },
    {
        "problem_id": 4,
        "problem": "Read the sign.",
        "data_type": "image",
        "problem_type": "OCR",
        "solution": "<answer>STOP</answer>",
        "path": "./images/d.png",
    },
]


@pytest.fixture
def video_r1_file(tmp_path):
    path = tmp_path / "Video-R1-260k.json"
    path.write_text(json.dumps(ROWS))
    return path


def test_rows_become_image_and_video_records(video_r1_file):
    result = load_records(video_r1_file, skip_invalid=True)
    assert result.format == "video_r1" and result.skipped == 1  # OCR: no family
    image_qa, video_qa, count = result.records
    assert image_qa.family == Family("video_qa") and image_qa.video is None
    assert image_qa.image.path.endswith("images/a.png")
    assert image_qa.answer == ChoiceAnswer("B") and image_qa.options == ("red", "blue", "green")
    assert video_qa.video.path.endswith("videos/b.mp4") and video_qa.answer == ChoiceAnswer("A")
    assert count.family == Family("spatial_intelligence") and count.answer == NumericAnswer(1200.0)
    assert (image_qa.id, count.subtype, image_qa.source) == ("1", "numerical", "CLEVR")


def test_an_unmapped_problem_type_is_a_one_line_error(video_r1_file):
    with pytest.raises(DataError, match="'OCR' has no videorl family") as info:
        load_records(video_r1_file, format="video_r1")
    assert "\n" not in str(info.value) and "data.skip_invalid=true" in str(info.value)
