"""TimeSearch-R's GRPO-CSV reward as a reward plug-in (`configs/timesearch_r.yaml`,
docs/fidelity.md#timesearch-r-configstimesearch_ryaml).

Time-Search/TimeSearch-R trains with `--reward_func v7` (`scripts/train.sh`), three terms
with weights 1.0, 0.5, 0.5 (`time_r1/reward/v7.py`):

- **format**: every model turn is `<think>..</think><tool_call>..</tool_call>` or, the last,
  `<think>..</think><answer>..</answer>` (`re.fullmatch` on the stripped text), never both
  tags in one turn;
- **accuracy**: the first `<answer>` block's text scored against the ground truth (here:
  the record family's scorer);
- **completeness**: accuracy times the completeness check's score (the same policy's answer
  from only the searched frames, `rollout/verification.py`; "I don't know" without frames),
  each first raised to 1 when above 0.5 (`compute_counterfactual_reasoning_score`).

    overall = (1.0 format + 0.5 accuracy + 0.5 accuracy' x check') / 2

Plug-in components are in [0, 1], so `overall` is v7's weighted sum halved (the recipe
halves the KL coefficient to match, docs/fidelity.md). The plug-in sees the final model turn
and the calls, not the earlier turns' text: the format term checks the final turn, and each
earlier turn only by its call having parsed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from videorl.data.records import TaskRecord
from videorl.rewards.calls import VERIFICATION_CALL, ToolCallMade, verification_answer
from videorl.rewards.config import RewardConfig
from videorl.rewards.registry import FAMILY_REWARDS
from videorl.rewards.result import unit

W_FORMAT, W_ACCURACY, W_COMPLETE = 1.0, 0.5, 0.5  # v7.py reward_weights
_ANSWER_TURN = re.compile(r"<think>.*?</think>\s*<answer>.*?</answer>", re.DOTALL)
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)


def format_ok(response: str, calls: Sequence[ToolCallMade]) -> bool:
    """v7's `multiturn_format_check` on what the plug-in sees: the final turn answers in
    the think-then-answer shape, and every tool call parsed."""
    if "<tool_call>" in response:
        return False
    if any(c.name == "?" for c in calls if c.name != VERIFICATION_CALL):
        return False
    return _ANSWER_TURN.fullmatch(response.strip()) is not None


def _family_score(record: TaskRecord, text: str, config: RewardConfig) -> float:
    family = FAMILY_REWARDS[record.family]
    return unit(family.score(record, text, config)["task"]) if text else 0.0


def check_score(record: TaskRecord, answer: str, config: RewardConfig) -> float:
    """The completeness check's answer scored as the family's answer: its `<answer>` block
    when it wrote one, else its whole text."""
    found = _ANSWER.search(answer)
    return _family_score(record, (found.group(1) if found else answer).strip(), config)


def _raised(score: float) -> float:
    return 1.0 if score > 0.5 else score  # v7.py: `if answer_score > 0.5: answer_score = 1.0`


def score(
    record: TaskRecord, response: str, config: RewardConfig, calls: Sequence[ToolCallMade] = ()
) -> Mapping[str, Any]:
    """`format`, `task` (accuracy), `check` (the completeness check's score), `complete`
    (accuracy' x check') and `overall` (v7's weighted sum / 2)."""
    fmt = 1.0 if format_ok(response, calls) else 0.0
    found = _ANSWER.search(response)
    accuracy = _family_score(record, found.group(1).strip(), config) if found else 0.0
    answer = verification_answer(tuple(calls))
    check = check_score(record, answer, config) if answer is not None else 0.0
    complete = _raised(accuracy) * _raised(check)
    overall = (W_FORMAT * fmt + W_ACCURACY * accuracy + W_COMPLETE * complete) / 2
    return {
        "format": fmt,
        "task": accuracy,
        "check": check,
        "complete": complete,
        "overall": overall,
    }
