"""OraRL's video qa reward, exactly as its adapter scores it.

Against ours (`rewards/orarl_parsing.py` says what every adapter shares; docs/fidelity.md):

- video QA: a bare letter A-H in any case (`(B)`, `B.` and `B. text` are format 0).
"""

from __future__ import annotations

from videorl.data.records import ChoiceAnswer, TaskRecord, TextAnswer
from videorl.rewards.orarl_parsing import bare_letter, canonical_payload, choice_reward
from videorl.rewards.registry import Components
from videorl.tasks.video_qa.text import text_match


def adapter(record: TaskRecord, response: str) -> tuple[float, Components]:
    answer = record.answer
    if isinstance(answer, TextAnswer):  # open-ended (no OraRL adapter): normalised match
        payload = canonical_payload(response) or ""
        return float(bool(payload.strip())), {"task": text_match(payload, answer.text)}
    assert isinstance(answer, ChoiceAnswer), f"record {record.id}: not a choice answer"
    return choice_reward(bare_letter(canonical_payload(response) or "", "A-H"), answer.letter)
