"""`data.group_by_family=false`: batches draw from one pool of all records, so images and
videos of different families share a step (Video-R1 samples its mixed 260k set so)."""

from __future__ import annotations

import collections

import pytest

from tests.data.test_task_sampler import make_records
from videorl.config import load_config
from videorl.data.sampler import TaskGroupedSampler
from videorl.errors import ConfigError


def test_one_pool_mixes_families_and_covers_every_record():
    records = make_records(tg=7, qa=4, math=2)  # 13 records
    sampler = TaskGroupedSampler(records, 3, seed=0, group_by_family=False)
    batches = list(sampler)
    assert len(sampler) == len(batches) == 5 and all(len(b) == 3 for b in batches)  # ceil(13/3)
    seen = collections.Counter(i for b in batches for i in b)
    assert set(seen) == set(range(13)) and sum(seen.values()) == 15  # 2 topped up
    assert any(len({records[i].family for i in b}) > 1 for b in batches)
    assert sampler.families == TaskGroupedSampler(records, 3).families  # whatever the grouping


def test_unshuffled_pool_keeps_file_order():
    records = make_records(tg=2, qa=2, math=0)
    sampler = TaskGroupedSampler(records, 2, shuffle=False, group_by_family=False)
    assert sampler.epoch_batches(0) == [[0, 1], [2, 3]]


def test_resume_refuses_another_grouping_and_old_states_mean_grouped():
    records = make_records()
    pooled = TaskGroupedSampler(records, 2, seed=5, group_by_family=False)
    next(iter(pooled))
    state = pooled.state_dict()
    assert state["group_by_family"] is False
    with pytest.raises(
        ConfigError, match="group_by_family=False but this run uses group_by_family=True"
    ):
        TaskGroupedSampler(records, 2, seed=5).load_state_dict(state)
    grouped = TaskGroupedSampler(records, 2, seed=5)
    assert "group_by_family" not in grouped.state_dict()  # the format older runs saved
    with pytest.raises(ConfigError, match="group_by_family=True"):
        pooled.load_state_dict(grouped.state_dict())


def test_the_config_key():
    assert load_config(None).data.group_by_family is True
    assert load_config(None, ["data.group_by_family=false"]).data.group_by_family is False
