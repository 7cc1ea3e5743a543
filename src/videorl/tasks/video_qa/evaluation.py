"""Video qa: how a benchmark scores it, accuracy, macro over subtypes too (`eval/metrics/choice.py`); the blind best is, per
question text, the most frequent correct option *text* among the options shown, else the
most frequent letter (the prompt states the question and options).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, cast

from videorl.data.records import ChoiceAnswer, TaskRecord
from videorl.eval.metrics import choice
from videorl.eval.scoring import FAMILY_EVALS, FamilyEval, SampleResult, values_of
from videorl.tasks.choice_scoring import score_choice_or_number


def blind_choice(train: Sequence[TaskRecord], val: Sequence[TaskRecord]) -> dict[str, Any]:
    """Accuracy (percent) on `val` of the most frequent correct option per question text
    (open-ended questions, `TextAnswer`, are left out; none left: accuracy 0)."""
    train = [r for r in train if isinstance(r.answer, ChoiceAnswer)]
    val = [r for r in val if isinstance(r.answer, ChoiceAnswer)]
    texts: dict[str, Counter] = {}
    letters: Counter = Counter()
    for r in train:
        letter = cast(ChoiceAnswer, r.answer).letter  # kept above: ChoiceAnswer only
        letters[letter] += 1
        index = ord(letter) - ord("A")
        if r.options and index < len(r.options):
            texts.setdefault(r.problem, Counter())[r.options[index]] += 1

    def guess(r: TaskRecord) -> str:
        for text, _ in texts.get(r.problem, Counter()).most_common():
            if r.options and text in r.options:
                return chr(ord("A") + list(r.options).index(text))
        return letters.most_common(1)[0][0] if letters else "A"

    correct = [guess(r) == cast(ChoiceAnswer, r.answer).letter for r in val]  # as train
    return {
        "answer": "most frequent option per question",
        "accuracy": 100.0 * sum(correct) / len(correct) if correct else 0.0,
    }


def summarize_video_qa(samples: Sequence[SampleResult]) -> dict[str, float]:
    return choice.summarize_choice(values_of(samples, "correct"), [x.subtype for x in samples])


FAMILY_EVALS.register(
    "video_qa", FamilyEval(score_choice_or_number, summarize_video_qa, blind=blind_choice)
)
