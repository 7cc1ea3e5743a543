"""What the multiple-choice families (video QA, spatial intelligence) share: their evaluation
scorer of a letter, a number or an open-ended text answer."""

from __future__ import annotations

from videorl.data.records import ChoiceAnswer, NumericAnswer, TaskRecord, TextAnswer
from videorl.eval import parsing
from videorl.eval.scoring import Scored
from videorl.rewards.geometry import mean_relative_accuracy
from videorl.tasks.video_qa.text import text_match


def score_choice_or_number(record: TaskRecord, text: str) -> Scored:
    answer = record.answer
    if isinstance(answer, TextAnswer):  # open-ended video QA: the normalised exact match
        stripped = text.strip()
        correct = text_match(stripped, answer.text)
        return stripped or None, {"score": correct, "correct": correct, "numeric": 0.0}
    if isinstance(answer, ChoiceAnswer):
        letter = parsing.parse_choice(text, record.options)
        correct = float(letter == answer.letter)
        return letter, {"score": correct, "correct": correct, "numeric": 0.0}
    assert isinstance(answer, NumericAnswer)
    value = parsing.parse_number(text)
    mra = 0.0 if value is None else mean_relative_accuracy(value, answer.value)
    return value, {"score": mra, "mra": mra, "numeric": 1.0}
