"""Data where users keep it: verl / EasyR1 / OraRL-Data layouts with media, column mappings,
folders with splits and Hugging Face datasets; media are never dropped silently."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from tests.hub_cache import offline_hub
from videorl.config import load_config
from videorl.data.columns import ColumnsConfig
from videorl.data.families import Family
from videorl.data.loaders import load_records
from videorl.data.records import (
    BoxAnswer,
    ChoiceAnswer,
    MathAnswer,
    NumericAnswer,
    TemporalAnswer,
    TrackingAnswer,
)
from videorl.errors import DataError


def jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def parquet(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


@pytest.fixture
def media(tmp_path) -> Path:
    folder = tmp_path / "media"
    folder.mkdir()
    for name in ("clip.mp4", "other.mp4"):
        (folder / name).write_bytes(b"not decoded by the loader")
    Image.new("RGB", (8, 6), (200, 10, 10)).save(folder / "frame.png")
    return folder


def test_easyr1_parquet_keeps_videos_and_images(tmp_path, media):
    rows: list[dict[str, Any]] = [
        {
            "problem": "<video>When does the cat jump?",
            "answer": "2.5 to 4.0",
            "videos": ["media/clip.mp4"],
            "images": None,
            "problem_type": "temporal_grounding",
        },
        {
            "problem": "<image>Where is the red cup?",
            "answer": "[1, 2, 5, 6]",
            "videos": None,
            "images": ["media/frame.png"],
            "problem_type": "spatial_grounding",
        },
        {
            "problem": "What is 2 + 3? Put the answer in \\boxed{}.",
            "answer": "\\boxed{5}",
            "videos": None,
            "images": None,
            "problem_type": None,
        },
    ]
    result = load_records(parquet(tmp_path / "train.parquet", rows))  # format: auto
    tg, sg, math = result.records
    assert result.format == "easyr1"  # a `problem` with media lists
    assert tg.family == Family("temporal_grounding") and tg.answer == TemporalAnswer(((2.5, 4.0),))
    assert tg.video.path == str(media / "clip.mp4") and tg.problem == "When does the cat jump?"
    assert tg.prompt.startswith("<video>When does the cat jump? A conversation between")
    assert math.prompt.endswith("The final answer MUST BE put in \\boxed{}.")  # math.jinja
    assert sg.family == Family("spatial_grounding") and sg.answer == BoxAnswer((1, 2, 5, 6))
    assert sg.image.path == str(media / "frame.png") and sg.video is None
    assert math.family == Family("math") and math.answer == MathAnswer("5") and math.media is None


def test_verl_chat_prompts_reward_model_and_video_dicts(tmp_path, media):
    rows: list[dict[str, Any]] = [
        {
            "data_source": "nextqa",
            "prompt": [
                {"role": "system", "content": "You are helpful."},
                {"role": "user", "content": "<video>\nWhat does the man hold?"},
            ],
            "ability": "video_qa",
            "reward_model": {"style": "rule", "ground_truth": "B"},
            "videos": [{"video": f"file://{media / 'clip.mp4'}", "fps": 2.0}],
            "options": ["a cup", "a ball", "a hat"],
            "extra_info": {"index": 11, "split": "train"},
        },
        {
            "data_source": "openai/gsm8k",
            "prompt": [{"role": "user", "content": "2 + 2 = ? #### style"}],
            "ability": "math",
            "reward_model": {"style": "rule", "ground_truth": ["4"]},
            "extra_info": {"index": 12, "split": "train"},
        },
    ]
    result = load_records(jsonl(tmp_path / "verl.jsonl", rows))  # auto: reward_model -> verl
    assert result.format == "verl"
    qa, math = result.records
    assert qa.family == Family("video_qa") and qa.answer == ChoiceAnswer("B")
    assert qa.options == ("a cup", "a ball", "a hat") and qa.id == "11"
    assert qa.video.path == str(media / "clip.mp4") and qa.source == "nextqa"
    assert qa.problem == "What does the man hold?"  # the user turn, placeholder removed
    assert math.family == Family("math") and math.answer == MathAnswer("4")


def test_orarl_layout_families_from_problem_type(tmp_path, media):
    rows: list[dict[str, Any]] = [
        {
            "problem": "How many chairs are in the room?",
            "answer": "3",
            "images": [],
            "videos": ["media/clip.mp4"],
            "problem_type": "object_counting",
            "source": "scannet",
            "family": "spatial_intelligence",
        },
        {
            "problem": "Track the dog.",
            "answer": {"boxes": {"0": [1, 1, 4, 4], "5": [2, 2, 5, 5]}},
            "images": [],
            "videos": [{"path": "media/other.mp4"}],
            "problem_type": "tracking",
            "source": "got10k",
            "family": "tracking",
        },
    ]
    si, trk = load_records(jsonl(tmp_path / "orarl.jsonl", rows), format="orarl").records
    assert si.family == Family("spatial_intelligence") and si.subtype == "object_counting"
    assert si.answer == NumericAnswer(3.0) and si.source == "scannet"
    assert trk.family == Family("tracking") and isinstance(trk.answer, TrackingAnswer)
    assert trk.video.path == str(media / "other.mp4")
    auto = load_records(tmp_path / "orarl.jsonl")  # OraRL rows have `family`: not our records
    assert [r.family for r in auto.records] == [si.family, trk.family]


def test_column_mapping_from_the_config(tmp_path, media):
    rows = [{"q": "When is the goal?", "gt": [1, 3], "clip": "media/clip.mp4", "task": "tg"}]
    path = jsonl(tmp_path / "custom.jsonl", rows)
    overrides = [
        "data.columns.prompt=q",
        "data.columns.answer=gt",
        "data.columns.videos=clip",
        "data.columns.problem_type=task",
    ]
    columns = load_config(None, overrides).data.columns
    assert columns == ColumnsConfig(prompt="q", answer="gt", videos="clip", problem_type="task")
    (record,) = load_records(path, columns=columns).records
    assert record.family == Family("temporal_grounding") and record.answer.windows == ((1.0, 3.0),)
    assert record.video.path == str(media / "clip.mp4")


@pytest.mark.parametrize(
    "row, message",
    [
        ({"problem": "p", "answer": "1 to 2", "videos": ["media/clip.mp4"]}, "column 'videos'"),
        (
            {"problem": "p", "answer": "1", "images": ["media/frame.png"], "problem_type": "math"},
            "column 'images' holds media but the row's family is math",
        ),
        (
            {
                "problem": "p",
                "answer": "1 to 2",
                "videos": ["media/clip.mp4", "media/other.mp4"],
                "problem_type": "tg",
            },
            "column 'videos': 2 videos in one row",
        ),
        (
            {
                "problem": "p",
                "answer": "1 to 2",
                "videos": [["a.jpg", "b.jpg"]],
                "problem_type": "tg",
            },
            "list of frame files",
        ),
        (
            {"problem": "p", "answer": "B", "videos": [], "problem_type": "video_qa"},
            "needs a video or image",
        ),
    ],
)
def test_media_are_never_dropped(tmp_path, media, row, message):
    with pytest.raises(DataError) as err:
        load_records(jsonl(tmp_path / "bad.jsonl", [row]), format="easyr1")
    assert message in str(err.value) and "\n" not in str(err.value)
    skipped = load_records(tmp_path / "bad.jsonl", format="easyr1", skip_invalid=True)
    assert skipped.records == [] and skipped.skipped == 1


def test_folder_of_files_takes_the_requested_split(tmp_path, media):
    row = {
        "problem": "p",
        "answer": "1 to 2",
        "videos": ["../media/clip.mp4"],
        "problem_type": "tg",
    }
    jsonl(tmp_path / "data" / "train.jsonl", [row, row])
    parquet(tmp_path / "data" / "val.parquet", [row])
    assert len(load_records(tmp_path / "data").records) == 2
    val = load_records(tmp_path / "data", split="validation").records
    assert len(val) == 1 and Path(val[0].video.path).resolve() == media / "clip.mp4"  # type: ignore[arg-type]  # synthesised records carry it
    with pytest.raises(DataError, match="no files of split 'test'"):
        load_records(tmp_path / "data", split="test")
    assert len(load_records(tmp_path / "data", max_rows=1).records) == 1


def test_saved_hugging_face_dataset_with_embedded_images(tmp_path):
    datasets = pytest.importorskip("datasets")
    buffer = io.BytesIO()
    Image.new("RGB", (8, 6), (0, 200, 0)).save(buffer, format="PNG")
    rows = {
        "problem": ["<image>Which color is it? A. red B. green"],
        "answer": ["B"],
        "images": [[{"bytes": buffer.getvalue(), "path": None}]],
        "problem_type": ["video_qa"],
    }
    features = datasets.Features(
        {
            "problem": datasets.Value("string"),
            "answer": datasets.Value("string"),
            "images": datasets.List(datasets.Image()),
            "problem_type": datasets.Value("string"),
        }
    )
    dataset = datasets.DatasetDict({"train": datasets.Dataset.from_dict(rows, features=features)})
    dataset.save_to_disk(str(tmp_path / "saved"))
    (record,) = load_records(tmp_path / "saved", split="train").records
    assert record.family == Family("video_qa") and record.answer == ChoiceAnswer("B")
    assert record.image.frames.shape == (1, 6, 8, 3) and record.image.frames[0, 0, 0, 1] == 200


def test_hub_dataset_id_goes_through_load_dataset(tmp_path, media, monkeypatch):
    datasets = pytest.importorskip("datasets")
    calls = []
    table = datasets.Dataset.from_list(
        [{"problem": "q", "answer": "1 to 2", "videos": [str(media / "clip.mp4")]}]
    )

    def fake_load_dataset(name, split=None, streaming=False):
        calls.append((name, split, streaming))
        return table

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    result = load_records("hf://datasets/org/videos@test", family="tg", streaming=True)
    assert calls == [("org/videos", "test", True)]
    assert result.records[0].video.path == str(media / "clip.mp4")
    load_records("org/videos", family="tg", split="validation")
    assert calls[-1] == ("org/videos", "validation", False)


def test_streaming_with_max_rows_stops_early(media, monkeypatch):
    datasets = pytest.importorskip("datasets")
    read = []

    def endless():
        while True:
            read.append(1)
            yield {"problem": "q", "answer": "B", "videos": [str(media / "clip.mp4")]}

    def fake_load_dataset(name, split=None, streaming=False):
        assert streaming
        return datasets.IterableDataset.from_generator(endless)

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    result = load_records("org/huge", family="qa", streaming=True, max_rows=3)
    assert len(result.records) == 3 and len(read) < 10


def test_missing_data_names_the_keys(tmp_path, monkeypatch):
    with pytest.raises(DataError, match="check data.train / data.val") as err:
        load_records(tmp_path / "absent.jsonl")
    assert "train_files" not in str(err.value)
    datasets = pytest.importorskip("datasets")
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    with offline_hub(tmp_path / "hf_home"), pytest.raises(DataError) as err:
        load_records("nobody-here/no-such-dataset")
    text = str(err.value)
    assert "not a local file or folder" in text and "\n" not in text
    assert "hf download nobody-here/no-such-dataset --repo-type dataset" in text
