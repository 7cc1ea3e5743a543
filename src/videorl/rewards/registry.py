"""Each family's reward (scorer, serializer, answer protocol, OraRL adapter;
docs/methods.md#rewards), as its `tasks/<family>/reward.py` registers it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from videorl.data.families import PartTable
from videorl.data.records import TaskRecord
from videorl.rewards.config import RewardConfig
from videorl.rewards.protocol import TAGGED, Protocol

Components = dict[str, float]


@dataclass(frozen=True)
class FamilyReward:
    """`score(record, payload, config)` returns `task` and the family's extras (each in
    [0, 1]); `serialize(record)` is the payload of a perfect answer; `protocol` places the
    payload in a response; `orarl(record, response)` -> (format, components) is OraRL's
    adapter under `reward.mode: orarl` (None: videorl's scorer there too)."""

    score: Callable[[TaskRecord, str, RewardConfig], Components]
    serialize: Callable[[TaskRecord], str]
    protocol: Protocol = TAGGED
    orarl: Callable[[TaskRecord, str], tuple[float, Components]] | None = None


FAMILY_REWARDS: PartTable[FamilyReward] = PartTable("reward", "reward")
