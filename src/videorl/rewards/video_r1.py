"""Video-R1's accuracy and format rewards, exactly (`reward.mode: video_r1`,
docs/methods.md#video-r1-answer-parsing).

Source: tulerfeng/Video-R1 `src/r1-v/src/open_r1/grpo.py` (`accuracy_reward` lines 66-165,
`format_reward` lines 168-173). On the raw response text:

- format: 1 iff the whole text matches `<think>.*?</think>\\s*<answer>.*?</answer>` (DOTALL,
  `re.fullmatch`): nothing before `<think>` or after the last `</answer>`, no whitespace
  around them either;
- the answer: the text between the first `<answer>` and the first `</answer>` after it,
  stripped (`re.search(r'<answer>\\s*(.*?)\\s*</answer>')`), "" when there is none; the
  reference is read the same way from the row's `solution`;
- multiple choice: 1 iff the answer equals the reference string (`B` only: not `(B)`, `B.`,
  `b`);
- numerical: 0 unless both or neither contain `.` or `,`; then both as `float` (commas
  removed), 1 iff equal after `round(x, 2)`;
- regression: `1 - clip((|p - t| + 1e-9) / (|t| + 1e-9), 0, 1)`.

The two regexes are scanned linearly here (same language, no backtracking). One deliberate
difference: a regression answer whose relative error is NaN (`nan`, or `inf` for an infinite
reference) scores 0, where Video-R1's gives it 1.0 (`max(0.0, nan)` is 0.0). Overall is `accuracy + format`, Video-R1's summed rewards.
"""

from __future__ import annotations

import math

from videorl.data.formats import VIDEO_R1_SOLUTION
from videorl.data.records import ChoiceAnswer, NumericAnswer, TaskRecord

__all__ = [
    "SOLUTION_KEY",
    "accuracy",
    "answer_text",
    "format_ok",
    "problem_type",
    "score",
    "supports",
]

SOLUTION_KEY = VIDEO_R1_SOLUTION
"""`TaskRecord.extra` key of the row's `solution` text, `<answer>B</answer>` (`data.format:
video_r1` keeps it)."""
_OPEN, _CLOSE = "<answer>", "</answer>"
_THINK_OPEN, _THINK_CLOSE = "<think>", "</think>"


def format_ok(text: str) -> bool:
    """`re.fullmatch(r"<think>.*?</think>\\s*<answer>.*?</answer>", text, re.DOTALL)`:
    the text opens with `<think>`, closes with `</answer>`, and some `</think>` after the
    opening tag is followed by whitespace only, then an `<answer>` that ends before the
    closing `</answer>`."""
    if not (text.startswith(_THINK_OPEN) and text.endswith(_CLOSE)):
        return False
    last = len(text) - len(_CLOSE)  # where the closing </answer> starts
    at = text.find(_THINK_CLOSE, len(_THINK_OPEN))
    while at >= 0:
        rest = text[at + len(_THINK_CLOSE) :]
        start = len(text) - len(rest.lstrip())
        if text.startswith(_OPEN, start) and start + len(_OPEN) <= last:
            return True
        at = text.find(_THINK_CLOSE, at + 1)
    return False


def answer_text(text: str) -> str:
    """Video-R1's `extract_answer`: the first `<answer>` up to the first `</answer>` after
    it, stripped; "" without one."""
    start = text.find(_OPEN)
    if start < 0:
        return ""
    end = text.find(_CLOSE, start + len(_OPEN))
    return "" if end < 0 else text[start + len(_OPEN) : end].strip()


def _number(text: str) -> float | None:
    """`normalize_number`: `float` of the text without commas, None when it does not read."""
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def _numerical(answer: str, target: str) -> float:
    if ("." in target or "," in target) != ("." in answer or "," in answer):
        return 0.0
    got, want = _number(answer), _number(target)
    if got is None or want is None:
        return 0.0
    return 1.0 if round(want, 2) == round(got, 2) else 0.0


def _regression(answer: str, target: str) -> float:
    got, want = _number(answer), _number(target)
    if got is None or want is None:
        return 0.0
    relative = (abs(got - want) + 1e-9) / (abs(want) + 1e-9)
    if math.isnan(relative):  # Video-R1: max(0.0, nan) is 0.0, a reward of 1.0
        return 0.0
    return 1.0 - min(1.0, max(0.0, relative))


def problem_type(record: TaskRecord) -> str | None:
    """The Video-R1 problem type a record is scored as: `multiple choice` for an option
    letter, `regression` for a number whose subtype says so, else `numerical`; None for
    other answers (scored by the family's own reward)."""
    if isinstance(record.answer, ChoiceAnswer):
        return "multiple choice"
    if isinstance(record.answer, NumericAnswer):
        return "regression" if record.subtype == "regression" else "numerical"
    return None


def supports(record: TaskRecord) -> bool:
    """Whether `reward.mode: video_r1` scores this record with Video-R1's rules."""
    return bool(record.family.task.video_r1_types) and problem_type(record) is not None


def _reference(record: TaskRecord) -> str:
    """The reference answer text: `extract_answer` of the row's `solution` when the record
    came from a Video-R1 file, else the letter or the number as text."""
    stored = record.extra.get(SOLUTION_KEY)
    if isinstance(stored, str):
        return answer_text(stored)
    answer = record.answer
    if isinstance(answer, ChoiceAnswer):
        return answer.letter
    assert isinstance(answer, NumericAnswer), f"record {record.id}: no Video-R1 answer type"
    value = answer.value
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def accuracy(record: TaskRecord, response: str) -> float:
    """Video-R1's `accuracy_reward` of one response, by the record's problem type."""
    kind, answer, target = problem_type(record), answer_text(response), _reference(record)
    if kind == "multiple choice":
        return 1.0 if answer == target else 0.0
    if kind == "numerical":
        return _numerical(answer, target)
    return _regression(answer, target)


def score(record: TaskRecord, response: str) -> tuple[float, dict[str, float]]:
    """(format, {"task": accuracy}) of one response."""
    return (1.0 if format_ok(response) else 0.0), {"task": accuracy(record, response)}
