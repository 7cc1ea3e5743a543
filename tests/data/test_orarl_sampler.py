"""`data.sampler: orarl` batches as OraRL's `TaskGroupedBatchSampler` (issue 31, item 7a).

Published: HVision-NKU/OraRL at e3903be. `configs/orarl_4b.yaml` lines 31-34: `shuffle: true`,
`seed: 42`, `group_by_task: true`, `group_by_task_key: problem_type`;
`verl/trainer/data_loader.py` lines 75-83 build the sampler with `drop_last=True`;
`verl/utils/dataset.py` lines 236-326: rows grouped by their `problem_type` string (lines
261-282), groups sorted by name (284), each group permuted by `torch.randperm` from one
generator seeded once (249-250, 303) at every epoch, cut into batches with the incomplete
tail dropped (305-310), batches taken round-robin over the sorted groups (313-323),
`len` = sum of full batches (286-290). OraRL-Data names spatial-intelligence rows by subtype
(`object_counting`, `route_planning`, ...; `orarl/rewards/router.py` aliases), so each
subtype is a group of its own.
"""

from __future__ import annotations

import json

import pytest

from videorl.config import load_config
from videorl.data.loaders import load_records
from videorl.data.records import record_from_dict
from videorl.data.sampler import TaskGroupedSampler, task_key
from videorl.errors import ConfigError

# row index -> problem_type, in file order
TYPES = [
    "temporal_grounding",
    "object_counting",
    "video_qa",
    "temporal_grounding",
    "route_planning",
    "object_counting",
    "video_qa",
    "temporal_grounding",
    "route_planning",
    "video_qa",
    "object_counting",
    "temporal_grounding",
    "video_qa",
    "temporal_grounding",
]


def _record(index: int, problem_type: str):
    family = {
        "temporal_grounding": ("temporal_grounding", {"windows": [[1.0, 2.0]]}),
        "video_qa": ("video_qa", {"letter": "A"}),
        "object_counting": ("spatial_intelligence", {"value": 3}),
        "route_planning": ("spatial_intelligence", {"letter": "A"}),
    }[problem_type]
    return record_from_dict(
        {
            "id": str(index),
            "family": family[0],
            "problem": "q",
            "answer": family[1],
            "video": {"path": "v.mp4"},
            "options": ["a", "b"],
            "extra": {"problem_type": problem_type},
        }
    )


RECORDS = [_record(i, t) for i, t in enumerate(TYPES)]


def test_groups_are_problem_types_sorted_and_tails_dropped():
    # object_counting [1, 5, 10], route_planning [4, 8], temporal_grounding [0, 3, 7, 11, 13],
    # video_qa [2, 6, 9, 12]; batch 2 without shuffling: 10 and 13 are the dropped tails.
    sampler = TaskGroupedSampler(RECORDS, 2, seed=42, shuffle=False, sampler="orarl")
    assert sampler.tasks == {
        "object_counting": 3,
        "route_planning": 2,
        "temporal_grounding": 5,
        "video_qa": 4,
    }
    assert sampler.epoch_batches(0) == [[1, 5], [4, 8], [0, 3], [2, 6], [7, 11], [9, 12]]
    assert len(sampler) == 1 + 1 + 2 + 2
    # ours (videorl) keeps the two spatial-intelligence subtypes in one family (5 records)
    # and tops up short batches instead: SI 3, TG 3, QA 2 batches, every record trained on
    assert len(TaskGroupedSampler(RECORDS, 2, seed=42, shuffle=False)) == 3 + 3 + 2


def test_shuffle_is_one_generator_seeded_once():
    # torch.Generator().manual_seed(42), randperm per group in sorted order, epoch after
    # epoch: epoch 0 draws [0, 2, 1], [0, 1], [4, 3, 0, 1, 2], [0, 2, 3, 1]; epoch 1 continues
    # with [1, 0, 2], [0, 1], [4, 0, 3, 1, 2], [3, 1, 2, 0].
    sampler = TaskGroupedSampler(RECORDS, 2, seed=42, sampler="orarl")
    epoch0 = [[1, 10], [4, 8], [13, 11], [2, 9], [0, 3], [12, 6]]
    epoch1 = [[5, 1], [4, 8], [13, 0], [12, 6], [11, 3], [9, 2]]
    assert sampler.epoch_batches(0) == epoch0
    assert sampler.epoch_batches(1) == epoch1
    assert list(sampler) == epoch0 and list(sampler) == epoch1  # iteration: epoch after epoch
    resumed = TaskGroupedSampler(RECORDS, 2, seed=42, sampler="orarl")
    running = TaskGroupedSampler(RECORDS, 2, seed=42, sampler="orarl")
    for _ in range(8):  # into epoch 1
        running.next_batch()
    resumed.load_state_dict(running.state_dict())
    assert resumed.next_batch() == running.next_batch() == epoch1[2]


def test_resume_refuses_another_sampler():
    state = TaskGroupedSampler(RECORDS, 2, seed=42, sampler="orarl").state_dict()
    assert state["sampler"] == "orarl"
    with pytest.raises(ConfigError, match="sampler=orarl"):
        TaskGroupedSampler(RECORDS, 2, seed=42).load_state_dict(state)


def test_no_full_batch_is_a_one_line_error():
    with pytest.raises(ConfigError, match="no problem_type has 6 records"):
        TaskGroupedSampler(RECORDS, 6, seed=42, sampler="orarl")


def test_the_loader_keeps_the_rows_problem_type(tmp_path):
    rows = [
        {"problem": "How many chairs?", "answer": 4, "images": [], "videos": ["a.mp4"],
         "problem_type": "object_counting", "source": "vsi"},
        {"problem": "a dog jumps", "answer": [3.0, 7.5], "images": [], "videos": ["b.mp4"],
         "problem_type": "temporal_grounding", "source": "charades"},
    ]  # fmt: skip
    path = tmp_path / "orarl.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    counting, grounding = load_records(path).records
    assert counting.extra["problem_type"] == task_key(counting) == "object_counting"
    assert task_key(grounding) == "temporal_grounding"
    # records without the column: the subtype for spatial intelligence, else the family
    assert task_key(record_from_dict({**counting.to_dict(), "extra": {}})) == counting.subtype


def test_config_and_recipes():
    from videorl.api import resolve_config_path

    for recipe in ("orarl", "orarl_9b"):
        data = load_config(resolve_config_path(recipe)).data
        assert (data.sampler, data.seed, data.shuffle, data.group_by_family) == (
            "orarl",
            42,
            True,
            True,
        )
    assert load_config(None).data.sampler == "videorl"
    with pytest.raises(ConfigError, match="data.sampler.*'random'"):
        load_config(None, ["data.sampler=random"])
    with pytest.raises(ConfigError, match="data.group_by_family=true"):
        load_config(None, ["data.sampler=orarl", "data.group_by_family=false"])
