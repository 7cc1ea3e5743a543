"""Each family's reward (scorer, serializer, answer protocol; docs/methods.md#rewards), as its
module under `videorl/tasks/` registers them."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from videorl.data.families import Family, families
from videorl.data.records import TaskRecord
from videorl.rewards.config import RewardConfig
from videorl.rewards.protocol import TAGGED, Protocol


@dataclass(frozen=True)
class FamilyReward:
    """`score(record, payload, config)` returns `task` and the family's extras (each in
    [0, 1]); `serialize(record)` is the payload of a perfect answer; `protocol` places the
    payload in a response."""

    score: Callable[[TaskRecord, str, RewardConfig], dict[str, float]]
    serialize: Callable[[TaskRecord], str]
    protocol: Protocol = TAGGED


class _FamilyRewards(Mapping[Family, FamilyReward]):
    """`FAMILY_REWARDS[family]`: read from the family's registration when asked."""

    def __getitem__(self, family: Family) -> FamilyReward:
        task = family.task
        return FamilyReward(task.reward, task.serialize, task.protocol or TAGGED)

    def __iter__(self) -> Iterator[Family]:
        return iter(families())

    def __len__(self) -> int:
        return len(families())


FAMILY_REWARDS: Mapping[Family, FamilyReward] = _FamilyRewards()
