"""Open-ended video QA: a free-text ground truth (`TextAnswer`), as LongVT's RL rows carry it
(verl layout: `reward_model.ground_truth` text, `extra_info.question`,
`extra_info.video_segment`); choice rows load exactly as before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.rewards.factories import make
from videorl.data.families import Family
from videorl.data.loaders import load_records
from videorl.data.records import ChoiceAnswer, TextAnswer, record_from_dict
from videorl.errors import DataError
from videorl.eval.scoring import score_record
from videorl.rewards import RewardConfig, score_response
from videorl.tasks.choice_prompts import choice_or_number

QUESTION = "What does the man put into the pot after the onions?"
TRUTH = "He adds chopped tomatoes."
LONGVT_ROW = {
    "data_source": "longvt",
    "prompt": [
        {
            "role": "user",
            "content": f"<video>\n{QUESTION} Think first, call **crop_video** if needed, then "
            "answer. Format strictly as: <think>...</think> <tool_call>...</tool_call> (if "
            "tools needed) <answer>...</answer>",
        }
    ],
    "reward_model": {"style": "model", "ground_truth": TRUTH},
    "extra_info": {"index": 7, "question": QUESTION, "video_segment": [812.0, 845.5]},
}


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_a_longvt_row_loads_as_open_ended_video_qa(tmp_path):
    (tmp_path / "cook.mp4").write_bytes(b"not decoded by the loader")
    row = {**LONGVT_ROW, "videos": [{"video": str(tmp_path / "cook.mp4")}]}
    result = load_records(write(tmp_path / "rl.jsonl", [row]), family="video_qa")
    (record,) = result.records
    assert result.format == "verl"
    assert record.family == Family("video_qa") and record.answer == TextAnswer(TRUTH)
    assert record.extra == {"question": QUESTION, "video_segment": [812.0, 845.5]}
    assert record.id == "7" and record.options == ()
    # the JSON form round-trips
    assert record_from_dict(record.to_dict()) == record
    assert record.to_dict()["answer"] == {"text": TRUTH}


def test_letters_and_option_rows_load_as_choices_as_before(tmp_path):
    (tmp_path / "cook.mp4").write_bytes(b"x")
    video = {"videos": [{"video": str(tmp_path / "cook.mp4")}]}
    letter = {**LONGVT_ROW, **video, "reward_model": {"ground_truth": "B"}}
    (record,) = load_records(write(tmp_path / "a.jsonl", [letter]), family="video_qa").records
    assert record.answer == ChoiceAnswer("B")
    # a row with options whose answer is none of them is still an error, never open-ended
    wrong = {**LONGVT_ROW, **video, "options": ["a cup", "a hat"]}
    with pytest.raises(DataError, match="is not an option letter"):
        load_records(write(tmp_path / "b.jsonl", [wrong]), family="video_qa")


def test_an_empty_text_answer_is_refused():
    with pytest.raises(DataError, match="non-empty answer text"):
        make("video_qa", {"text": "  "})


def test_open_ended_prompt_reward_and_eval_without_a_judge():
    record = make("video_qa", {"text": TRUTH}, problem=QUESTION)
    assert choice_or_number(record) == f"{QUESTION}\nAnswer in a few words or a sentence."
    config = RewardConfig(num_workers=1)
    right = score_response(record, "<answer>he adds Chopped   tomatoes</answer>", config)
    assert right.overall == 1.0  # normalised exact match
    assert score_response(record, "<answer>tomatoes</answer>", config).overall == 0.0
    orarl = RewardConfig(num_workers=1, mode="orarl")
    assert score_response(record, f"<answer>{TRUTH}</answer>", orarl).overall == 1.0
    scored = score_record(record, f"<answer>{TRUTH.upper()}</answer>")
    assert scored.score == 1.0 and scored.values["correct"] == 1.0
    assert score_record(record, "<answer>no idea</answer>").score == 0.0
