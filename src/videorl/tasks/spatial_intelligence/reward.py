"""Spatial intelligence (SI): numeric subtypes (absolute distance, counting, object size, room
size) answer a number scored by mean relative accuracy (docs/methods.md#mean-relative-accuracy);
choice subtypes (relative distance, route planning, appearance order, relative direction) answer a
letter scored by exact match. The kind follows the record's typed answer.
"""

from __future__ import annotations

from videorl.data.records import ChoiceAnswer, NumericAnswer, TaskRecord
from videorl.rewards.config import RewardConfig
from videorl.rewards.geometry import mean_relative_accuracy
from videorl.rewards.payload import format_number, parse_letter, parse_number
from videorl.rewards.protocol import TAGGED
from videorl.rewards.registry import FAMILY_REWARDS, FamilyReward


def score(record: TaskRecord, payload: str, _config: RewardConfig) -> dict[str, float]:
    """Numeric: `task` = `mra` = MRA(prediction, target); choice: `task` = letter match."""
    answer = record.answer
    if isinstance(answer, ChoiceAnswer):
        return {"task": float(parse_letter(payload) == answer.letter)}
    assert isinstance(answer, NumericAnswer), f"record {record.id}: not a numeric or choice answer"
    value = parse_number(payload)
    mra = 0.0 if value is None else mean_relative_accuracy(value, answer.value)
    return {"task": mra, "mra": mra}


def serialize(record: TaskRecord) -> str:
    """The ground-truth number (`3.5`) or letter (`C`)."""
    answer = record.answer
    if isinstance(answer, ChoiceAnswer):
        return answer.letter
    assert isinstance(answer, NumericAnswer), f"record {record.id}: not a numeric or choice answer"
    return format_number(answer.value)


from videorl.tasks.spatial_intelligence import orarl

FAMILY_REWARDS.register(
    "spatial_intelligence", FamilyReward(score, serialize, TAGGED, orarl=orarl.adapter)
)
