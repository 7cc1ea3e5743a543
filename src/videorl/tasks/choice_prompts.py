"""The prompts the choice-or-number families (video QA, spatial intelligence) share: videorl's,
OraRL's question template and Video-R1's `QUESTION_TEMPLATE` + `TYPE_TEMPLATE`
(`src/r1-v/src/open_r1/grpo.py`), verbatim; each family adds its OraRL tails."""

from __future__ import annotations

from videorl.data.prompts import options_block
from videorl.data.records import LETTERS, NumericAnswer, TaskRecord, TextAnswer


def choice_or_number(record: TaskRecord) -> str:
    if isinstance(record.answer, TextAnswer):
        return f"{record.problem}\nAnswer in a few words or a sentence."
    if isinstance(record.answer, NumericAnswer) or not record.options:
        return f"{record.problem}\nAnswer with a single number as <answer>N</answer>."
    return f"{record.problem}\n{options_block(record)}"


ORARL_SI_NUMBER_TAILS = {
    "object_counting": "Answer with an integer within <answer>...</answer> tags. "
    "Example: <answer>3</answer>",
    "abs_distance": "Answer with a number in meters within <answer>...</answer> tags. "
    "Example: <answer>2.3</answer>",
    "object_size": "Answer with a number in centimeters within <answer>...</answer> tags. "
    "Example: <answer>120.5</answer>",
    "room_size": "Answer with a number in square meters within <answer>...</answer> tags. "
    "Example: <answer>25.5</answer>",
}


def option_lines(record: TaskRecord) -> str:
    return "\n".join(
        f"{letter}. {text}" for letter, text in zip(LETTERS, record.options, strict=False)
    )


def orarl_choice_or_number(record: TaskRecord, prefix: str, choice_tail: str) -> str:
    """OraRL's question template: `prefix`, the problem, then a number's tail by subtype, or
    the options and `choice_tail` (an open-ended question, which OraRL has not: the problem
    and a request for a short answer in the tags)."""
    if isinstance(record.answer, TextAnswer):
        return f"{prefix}{record.problem} Answer briefly within <answer>...</answer> tags."
    if isinstance(record.answer, NumericAnswer) or not record.options:
        tail = ORARL_SI_NUMBER_TAILS.get(
            record.subtype or "", ORARL_SI_NUMBER_TAILS["abs_distance"]
        )
        return f"{prefix}{record.problem} {tail}"
    return f"{prefix}{record.problem}\nOptions:\n{option_lines(record)}\n{choice_tail}"


VIDEO_R1_QUESTION = (
    "{}\n"
    "Please think about this question as if you were a human pondering deeply. "
    "Engage in an internal dialogue using expressions such as 'let me think', 'wait', 'Hmm', "
    "'oh, I see', 'let's break it down', etc, or other natural language thought expressions "
    "It's encouraged to include self-reflection or verification in the reasoning process. "
    "Provide your detailed reasoning between the <think> </think> tags, and then give your "
    "final answer between the <answer> </answer> tags."
)
VIDEO_R1_CHOICE_TAIL = (
    " Please provide only the single option letter (e.g., A, B, C, D, etc.) within the "
    "<answer> </answer> tags."
)
# Video-R1's "numerical" and "regression" tails are the same text
# Video-R1's `free-form` type template (open-ended questions).
VIDEO_R1_TEXT_TAIL = " Please provide your text answer within the <answer> </answer> tags."
VIDEO_R1_NUMBER_TAIL = (
    " Please provide the numerical value (e.g., 42 or 3.14) within the <answer> </answer> tags."
)


def video_r1_choice_or_number(record: TaskRecord) -> str:
    """`make_conversation_image_and_video`: a multiple-choice question is the problem, then
    `Options:` and one `X. option` line each (no separator before `Options:`, as there)."""
    if isinstance(record.answer, TextAnswer):
        return VIDEO_R1_QUESTION.format(record.problem) + VIDEO_R1_TEXT_TAIL
    if isinstance(record.answer, NumericAnswer) or not record.options:
        return VIDEO_R1_QUESTION.format(record.problem) + VIDEO_R1_NUMBER_TAIL
    question = f"{record.problem}Options:\n{option_lines(record)}\n"
    return VIDEO_R1_QUESTION.format(question) + VIDEO_R1_CHOICE_TAIL
