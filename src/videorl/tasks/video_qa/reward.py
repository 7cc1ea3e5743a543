"""Video QA: payload one option letter A-H (`B`, `(B)`, `B.` or `B. option text`); task =
exact match with the ground-truth letter (docs/methods.md#rewards). An open-ended record
(`TextAnswer`) scores the normalised exact match of the answer text here; the LongVT plug-in
asks the LLM judge of `reward.judge` instead (`rewards/judge.py`)."""

from __future__ import annotations

from videorl.data.records import ChoiceAnswer, TaskRecord, TextAnswer
from videorl.rewards.config import RewardConfig
from videorl.rewards.payload import parse_letter
from videorl.rewards.protocol import TAGGED
from videorl.rewards.registry import FAMILY_REWARDS, FamilyReward
from videorl.tasks.video_qa.text import text_match


def score(record: TaskRecord, payload: str, _config: RewardConfig) -> dict[str, float]:
    """`task` = 1 if the letter matches (open-ended: the normalised text), else 0."""
    answer = record.answer
    if isinstance(answer, TextAnswer):
        return {"task": text_match(payload, answer.text)}
    assert isinstance(answer, ChoiceAnswer), f"record {record.id}: not a choice answer"
    return {"task": float(parse_letter(payload) == answer.letter)}


def serialize(record: TaskRecord) -> str:
    """The ground-truth letter, e.g. `B` (open-ended: the reference text)."""
    answer = record.answer
    if isinstance(answer, TextAnswer):
        return answer.text
    assert isinstance(answer, ChoiceAnswer), f"record {record.id}: not a choice answer"
    return answer.letter


from videorl.tasks.video_qa import orarl

FAMILY_REWARDS.register("video_qa", FamilyReward(score, serialize, TAGGED, orarl=orarl.adapter))
