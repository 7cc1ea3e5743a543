"""OraRL's spatial intelligence reward, exactly as its adapter scores it.

Against ours (`rewards/orarl_parsing.py` says what every adapter shares; docs/fidelity.md):

- spatial intelligence: numbers must be bare (`12`, `-0.5`; format 0 otherwise), MRA is
  compared in floats over thresholds `0.50 + 0.05 k` (target 10, prediction 9: 0.8);
  choices are `A`-`D` only, a bare letter in any case;
"""

from __future__ import annotations

import re

from videorl.data.records import ChoiceAnswer, NumericAnswer, TaskRecord
from videorl.rewards.orarl_parsing import (
    NUMBER,
    bare_letter,
    canonical_payload,
    choice_reward,
    finite,
    last_answer_block,
)
from videorl.rewards.registry import Components

_BARE_NUMBER = re.compile(rf"\s*{NUMBER}\s*")
_FIRST_NUMBER = re.compile(NUMBER)
MRA_THRESHOLDS = tuple(0.50 + 0.05 * k for k in range(10))  # computed in floats, as OraRL does


def float_mra(prediction: float, target: float) -> float:
    """OraRL's MRA: thresholds and the relative error in floats (target 10, prediction 9:
    `0.1 <= 1.0 - 0.9 = 0.09999999999999998` fails, so 0.8; videorl's exact decimals give
    0.9, `geometry.mean_relative_accuracy`)."""
    if target == 0.0:
        return 0.0
    error = abs(prediction - target) / abs(target)
    return sum(error <= 1.0 - theta for theta in MRA_THRESHOLDS) / len(MRA_THRESHOLDS)


def adapter(record: TaskRecord, response: str) -> tuple[float, Components]:
    payload = canonical_payload(response)
    answer = record.answer
    if isinstance(answer, ChoiceAnswer):
        target = answer.letter if answer.letter in "ABCD" else ""
        return choice_reward(bare_letter(last_answer_block(payload), "A-D"), target)
    assert isinstance(answer, NumericAnswer), f"record {record.id}: not a numeric or choice answer"
    fmt = float(payload is not None and _BARE_NUMBER.fullmatch(payload) is not None)
    first = _FIRST_NUMBER.search(last_answer_block(payload))
    value = None if first is None else finite(first.group(0))
    mra = 0.0 if value is None else float_mra(value, answer.value)
    return fmt, {"task": mra, "mra": mra}
