"""Video QA: payload one option letter A-H (`B`, `(B)`, `B.` or `B. option text`); task =
exact match with the ground-truth letter (docs/methods.md#rewards). An open-ended record
(`TextAnswer`) scores the normalised exact match of the answer text here; the LongVT plug-in
asks the LLM judge of `reward.judge` instead (`rewards/judge.py`)."""

from __future__ import annotations

import re

from videorl.data.records import ChoiceAnswer, TaskRecord, TextAnswer
from videorl.rewards.config import RewardConfig
from videorl.rewards.payload import parse_letter
from videorl.rewards.protocol import TAGGED
from videorl.rewards.registry import FAMILY_REWARDS, FamilyReward

_SPACES = re.compile(r"\s+")
_EDGE_PUNCTUATION = ".,;:!?\"'()[]{} "


def normalized_text(text: str) -> str:
    """Lower case, one space between words, no punctuation at either end."""
    return _SPACES.sub(" ", text.casefold()).strip(_EDGE_PUNCTUATION)


def text_match(payload: str, reference: str) -> float:
    """1 if the normalised texts are equal (and not empty), else 0."""
    answer = normalized_text(payload)
    return float(bool(answer) and answer == normalized_text(reference))


def score(record: TaskRecord, payload: str, config: RewardConfig) -> dict[str, float]:
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
