"""VideoAuto-R1's "think once, answer twice" reward (`reward.mode: videoauto_r1`,
docs/fidelity.md#videoauto-r1-configsvideoauto_r1yaml).

A response reads `\\boxed{a1}<think>...</think>\\boxed{a2}`: an initial answer, one
reasoning block, a reviewed answer. Source: IVUL-KAUST/VideoAuto-R1 `videoauto_r1/reward/
reward.py` (`accuracy_twice_boxed_reward1/2`, `format_twice_boxed_reward`) with
`--reward_weights 0.9 1.1 1` (`scripts/train/grpo_autothink/train_qwen2.5vl_grpo_auto_
text_image_video.sh`); the paper is arXiv 2601.05175 (the reward
`w1 R(a1) + w2 R(a2) + R_fmt` with w1 = 0.9 < w2 = 1.1, plus the fallback bonus):

    overall = 0.9 R(a1) + 1.1 R(a2) + format + 0.3 * fallback

- `a1`: the one `\\boxed{}` of the text before the first `<think>`; `a2`: the one after the
  last `</think>`; "" when that part holds zero or several boxes (a response without
  `<think>` has the same text on both sides: a lone `\\boxed{B}` is both answers, format 0);
- `R(a)`: the record family's own scorer on the boxed payload (`task`, in [0, 1]);
- `format`: 1 iff the whole response is `\\boxed{..}<think>..</think>\\boxed{..}` (space
  allowed between the parts and at the ends), at most one `<think>` and one `</think>`,
  each box's content with braces nested one level at most (reward.py's "not empty"
  lookahead `(?=[\\s\\S]*?\\S)` is met by the `<` of `</think>`, so an empty block passes
  there and here);
- `fallback`: 1 when a1 starts with `Let's analyze` (the model declining to answer
  without reasoning, as the published system prompt asks) and `R(a2) > 0.7`: reward.py
  adds 0.3 / 1.1 to the a2 term, 0.3 after its weight.

A family whose perfect payload cannot sit in a box (nested JSON: segmentation, tracking,
spatio-temporal grounding) keeps its own reward, as `reward.mode: video_r1` does for
records outside Video-R1's types.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from videorl.data.published_prompts import VIDEOAUTO_FALLBACK, VIDEOAUTO_SYSTEM
from videorl.data.records import TaskRecord
from videorl.rewards.config import RewardConfig
from videorl.rewards.registry import FAMILY_REWARDS
from videorl.rewards.result import unit

WEIGHT_A1, WEIGHT_A2, WEIGHT_FORMAT = 0.9, 1.1, 1.0  # --reward_weights 0.9 1.1 1
FALLBACK_BONUS = 0.3  # reward.py: + 0.3 / 1.1 inside the a2 term (weight 1.1)
FALLBACK_GATE = 0.7  # ... when R(a2) > 0.7
FALLBACK_PREFIX = "Let's analyze"  # reward.py: a1.lstrip().startswith(...)
SYSTEM_PROMPT, FALLBACK_ANSWER = VIDEOAUTO_SYSTEM, VIDEOAUTO_FALLBACK
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
# `\boxed{...}` whose content nests braces one level at most (reward.py's `_PATTERN_BOXED`).
# Each character is either a non-brace or opens a closed group: no backtracking blow-up.
_CONTENT = r"(?:[^{}]|\{[^{}]*\})*"
BOXED = re.compile(r"\\boxed\{(" + _CONTENT + r")\}")
_SHAPE = re.compile(
    r"\s*\\boxed\{"
    + _CONTENT
    + r"\}\s*<think>(?=[\s\S]*?\S)[\s\S]*?</think>\s*\\boxed\{"
    + _CONTENT
    + r"\}\s*\Z"
)


@dataclass(frozen=True)
class TwoAnswers:
    """The boxed answers of a response ("" when that side has none or several)."""

    first: str
    second: str
    format_ok: bool


def _single_box(text: str) -> str:
    found = BOXED.findall(text)
    return found[0].strip() if len(found) == 1 else ""


def first_answer(response: str) -> str:
    """a1: the one box before the first `<think>` ("" without exactly one)."""
    return _single_box(response.split(THINK_OPEN)[0])


def second_answer(response: str) -> str:
    """a2: the one box after the last `</think>` ("" without exactly one)."""
    return _single_box(response.split(THINK_CLOSE)[-1])


def format_ok(response: str) -> bool:
    """reward.py's `_PATTERN_ANSWER_THINK_ANSWER`; its "only one pair" lookaheads as counts."""
    if response.count(THINK_OPEN) > 1 or response.count(THINK_CLOSE) > 1:
        return False
    return _SHAPE.match(response) is not None


def parse(response: str) -> TwoAnswers:
    return TwoAnswers(first_answer(response), second_answer(response), format_ok(response))


def is_fallback(answer: str) -> bool:
    """a1 declines to answer before reasoning (`\\boxed{Let's analyze ...}`)."""
    return answer.lstrip().startswith(FALLBACK_PREFIX)


def boxable(record: TaskRecord) -> bool:
    """Whether the family's perfect payload reads back unchanged from a box."""
    payload = FAMILY_REWARDS[record.family].serialize(record)
    return _single_box(f"\\boxed{{{payload}}}") == payload.strip()


def gold_response(record: TaskRecord) -> str:
    """The answer-twice response that scores every term: `\\boxed{y}<think>\n\n</think>
    \\boxed{y}`, y the family's payload (what `sft.target=answer_twice` teaches)."""
    boxed = f"\\boxed{{{FAMILY_REWARDS[record.family].serialize(record)}}}"
    return f"{boxed}{THINK_OPEN}\n\n{THINK_CLOSE}{boxed}"


def score(record: TaskRecord, response: str, config: RewardConfig) -> dict[str, float]:
    """`format`, `answer1`, `answer2`, `fallback`, `task` (= answer2, the final answer) and
    `overall` = 0.9 answer1 + 1.1 answer2 + format + 0.3 fallback."""
    family = FAMILY_REWARDS[record.family]
    answers = parse(response)

    def accuracy(answer: str) -> float:
        return unit(family.score(record, answer, config)["task"]) if answer else 0.0

    first = 0.0 if is_fallback(answers.first) else accuracy(answers.first)
    second = accuracy(answers.second)
    fallback = 1.0 if is_fallback(answers.first) and second > FALLBACK_GATE else 0.0
    fmt = 1.0 if answers.format_ok else 0.0
    overall = WEIGHT_A1 * first + WEIGHT_A2 * second + WEIGHT_FORMAT * fmt
    overall += FALLBACK_BONUS * fallback
    return {
        "format": fmt,
        "task": second,
        "answer1": first,
        "answer2": second,
        "fallback": fallback,
        "overall": overall,
    }
