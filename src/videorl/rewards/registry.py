"""Each family's reward (scorer, serializer, answer protocol; docs/methods.md#rewards), as its
`FamilySpec` (`data/families.py`) names them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from videorl.data.families import FAMILY_SPECS, Family
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


FAMILY_REWARDS: dict[Family, FamilyReward] = {
    family: FamilyReward(
        score=spec.resolve("reward").score,
        serialize=spec.resolve("reward").serialize,
        protocol=spec.resolve("protocol"),
    )
    for family, spec in FAMILY_SPECS.items()
}
