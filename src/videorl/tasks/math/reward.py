"""Text-only math, the verifier of on-policy distillation (docs/methods.md#rewards,
#on-policy-distillation): the final `\\boxed{...}` answer scores 1 if `math-verify` finds it
# mathematically equivalent to the
reference, else 0.

The protocol differs from the video families: the answer is the last `\\boxed{...}` of the
response (after the think block when there is one); format = 1 iff it is complete (balanced
braces, at most 1,000 characters), so a truncated response scores 0.

The `\\boxed{}` protocol itself is generic (`rewards/protocol.py`: `BOXED_PROTOCOL`).
"""

from __future__ import annotations

import functools
import threading
from typing import Any

from videorl.data.records import MathAnswer, TaskRecord
from videorl.rewards.config import RewardConfig
from videorl.rewards.protocol import BOXED, BOXED_PROTOCOL, MAX_ANSWER_CHARS, last_boxed
from videorl.rewards.registry import FAMILY_REWARDS, FamilyReward

VERIFY_TIMEOUT_S = 5


def _timeout() -> int | None:
    # math-verify times out with SIGALRM, which only the main thread may set.
    return VERIFY_TIMEOUT_S if threading.current_thread() is threading.main_thread() else None


@functools.lru_cache(maxsize=1024)
def _parse_reference(reference: str, timeout: int | None) -> Any:
    from math_verify import parse  # lazy: sympy takes a second to import

    return parse(BOXED + "{" + reference + "}", parsing_timeout=timeout)


def reference_answer(record: TaskRecord) -> str:
    """The reference's final answer (the content of its box when it has one)."""
    answer = record.answer_as(MathAnswer)
    return last_boxed(answer.text) or answer.text


def is_equivalent(reference: str, answer: str) -> bool:
    """Whether `answer` equals `reference` mathematically (math-verify, gold first)."""
    if not answer.strip() or len(answer) > MAX_ANSWER_CHARS:
        return False
    from math_verify import parse, verify

    timeout = _timeout()
    gold = _parse_reference(reference, timeout)
    pred = parse(BOXED + "{" + answer + "}", parsing_timeout=timeout)
    return bool(gold) and bool(pred) and bool(verify(gold, pred, timeout_seconds=timeout))


def score(record: TaskRecord, payload: str, _config: RewardConfig) -> dict[str, float]:
    """`task` = 1 if the boxed answer is equivalent to the reference, else 0."""
    return {"task": float(is_equivalent(reference_answer(record), payload))}


def serialize(record: TaskRecord) -> str:
    """The reference answer (the protocol wraps it in `\\boxed{}`)."""
    return reference_answer(record)


FAMILY_REWARDS.register("math", FamilyReward(score, serialize, BOXED_PROTOCOL))
