"""Which parser, scorer, serializer and answer protocol each family uses (METHODS.md 1)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType

from videorl.data.families import Family
from videorl.data.records import TaskRecord
from videorl.rewards import (
    math_answer,
    segmentation,
    spatial_grounding,
    spatial_intelligence,
    spatio_temporal_grounding,
    temporal_grounding,
    tracking,
    video_qa,
)
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


def _from(module: ModuleType, protocol: Protocol = TAGGED) -> FamilyReward:
    return FamilyReward(score=module.score, serialize=module.serialize, protocol=protocol)


FAMILY_REWARDS: dict[Family, FamilyReward] = {
    Family.TEMPORAL_GROUNDING: _from(temporal_grounding),
    Family.SPATIAL_GROUNDING: _from(spatial_grounding, spatial_grounding.NATIVE_OR_TAGGED),
    Family.SEGMENTATION: _from(segmentation),
    Family.TRACKING: _from(tracking),
    Family.SPATIO_TEMPORAL_GROUNDING: _from(spatio_temporal_grounding),
    Family.VIDEO_QA: _from(video_qa),
    Family.SPATIAL_INTELLIGENCE: _from(spatial_intelligence),
    Family.MATH: _from(math_answer, math_answer.BOXED_PROTOCOL),
}
