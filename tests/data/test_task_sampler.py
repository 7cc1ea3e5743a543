"""Task-grouped, resumable batch sampler."""

from __future__ import annotations

import collections

import pytest

from videorl.data.families import Family
from videorl.data.records import ChoiceAnswer, MathAnswer, MediaRef, TaskRecord, TemporalAnswer
from videorl.data.sampler import TaskGroupedSampler
from videorl.errors import ConfigError


def make_records(tg: int = 7, qa: int = 4, math: int = 2) -> list[TaskRecord]:
    video = MediaRef(path="v.mp4")
    records = [
        TaskRecord(
            id=f"tg{i}",
            family=Family("temporal_grounding"),
            problem="p",
            answer=TemporalAnswer(((0.0, 1.0),)),
            video=video,
        )
        for i in range(tg)
    ]
    records += [
        TaskRecord(
            id=f"qa{i}",
            family=Family("video_qa"),
            problem="p",
            answer=ChoiceAnswer("A"),
            options=("a", "b"),
            video=video,
        )
        for i in range(qa)
    ]
    records += [
        TaskRecord(id=f"m{i}", family=Family("math"), problem="p", answer=MathAnswer("1"))
        for i in range(math)
    ]
    return records[::-1]  # families interleaved in the input order does not matter


def test_batches_are_single_family_in_rotation_and_cover_every_record():
    records = make_records()
    sampler = TaskGroupedSampler(records, batch_size=3, seed=0)
    batches = list(sampler)
    families = [{records[i].family for i in batch} for batch in batches]
    assert all(len(f) == 1 for f in families) and all(len(b) == 3 for b in batches)
    order = [f.pop() for f in families]
    assert order == [
        Family("temporal_grounding"),
        Family("video_qa"),
        Family("math"),
        Family("temporal_grounding"),
        Family("video_qa"),
        Family("temporal_grounding"),
    ]
    assert len(sampler) == len(batches) == 6
    seen = collections.Counter(i for b in batches for i in b)
    assert set(seen) == set(range(len(records)))  # every record at least once per epoch
    assert sum(seen.values()) - len(records) == 5  # topped up: tg 7->9, qa 4->6, math 2->3


def test_shuffle_depends_on_seed_and_epoch():
    records = make_records(tg=40, qa=0, math=0)
    first = list(TaskGroupedSampler(records, 4, seed=1))
    assert first == list(TaskGroupedSampler(records, 4, seed=1))
    assert first != list(TaskGroupedSampler(records, 4, seed=2))
    sampler = TaskGroupedSampler(records, 4, seed=1)
    epoch0, epoch1 = list(sampler), list(sampler)
    assert epoch0 == first and epoch1 != epoch0 and sampler.epoch == 2


def test_resume_continues_the_same_order():
    records = make_records()
    reference = TaskGroupedSampler(records, 2, seed=5)
    full = list(reference) + list(reference)
    running = TaskGroupedSampler(records, 2, seed=5)
    it = iter(running)
    taken = [next(it) for _ in range(3)]
    state = running.state_dict()
    resumed = TaskGroupedSampler(records, 2, seed=5)
    resumed.load_state_dict(state)
    rest = list(resumed) + list(resumed)
    assert state == {"epoch": 0, "position": 3, "seed": 5, "batch_size": 2}
    assert taken + rest == full  # rest of epoch 0, then epoch 1


def test_resume_refuses_a_different_seed():
    sampler = TaskGroupedSampler(make_records(), 2, seed=5)
    with pytest.raises(ConfigError, match="seed=5 but this run uses seed=6"):
        TaskGroupedSampler(make_records(), 2, seed=6).load_state_dict(sampler.state_dict())


def test_bad_arguments():
    with pytest.raises(ConfigError, match="batch_size=0"):
        TaskGroupedSampler(make_records(), 0)
    with pytest.raises(ConfigError, match="no records"):
        TaskGroupedSampler([], 2)


def test_next_batch_is_iteration_epoch_after_epoch_and_resumes_mid_way():
    records = make_records()
    iterated = TaskGroupedSampler(records, batch_size=3, seed=5)
    expected = [b for _ in range(3) for b in iterated]  # three epochs of __iter__
    drawn = TaskGroupedSampler(records, batch_size=3, seed=5)
    got = [drawn.next_batch() for _ in range(len(expected) // 2)]
    resumed = TaskGroupedSampler(records, batch_size=3, seed=5)
    resumed.load_state_dict(drawn.state_dict())
    got += [resumed.next_batch() for _ in range(len(expected) - len(got))]
    assert got == expected and resumed.epoch == 2


def test_peek_batch_is_the_next_batch_without_moving():
    sampler = TaskGroupedSampler(make_records(), batch_size=3, seed=5)
    for _ in range(3 * len(sampler)):  # across epochs: the peek of an epoch's end
        state = sampler.state_dict()
        peeked = sampler.peek_batch()
        assert sampler.state_dict() == state
        assert sampler.next_batch() == peeked
