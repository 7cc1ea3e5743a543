"""Video QA: payload one option letter A-H (`B`, `(B)`, `B.` or `B. option text`); task =
exact match with the ground-truth letter (docs/methods.md#rewards)."""

from __future__ import annotations

from videorl.data.records import ChoiceAnswer, TaskRecord
from videorl.rewards.config import RewardConfig
from videorl.rewards.payload import parse_letter


def score(record: TaskRecord, payload: str, config: RewardConfig) -> dict[str, float]:
    """`task` = 1 if the letter matches, else 0."""
    answer = record.answer
    assert isinstance(answer, ChoiceAnswer), f"record {record.id}: not a choice answer"
    return {"task": float(parse_letter(payload) == answer.letter)}


def serialize(record: TaskRecord) -> str:
    """The ground-truth letter, e.g. `B`."""
    answer = record.answer
    assert isinstance(answer, ChoiceAnswer), f"record {record.id}: not a choice answer"
    return answer.letter
