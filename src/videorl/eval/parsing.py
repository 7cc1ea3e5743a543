"""Lenient answer parsing for evaluation, separate from the strict training parsers.

Training rewards (`videorl.rewards`) demand the exact answer protocol of
docs/methods.md#answer-protocol: one `<answer>` block, the family's payload and nothing else, or
the response scores 0. Benchmarks measure what the model *answered*, not whether it kept the
format, so the functions here accept what a reader would accept:

- the answer text is the last complete `<answer>...</answer>`, else what follows an
  unclosed `<answer>`, else the text after `</think>`, else the whole response; a
  `\\boxed{X}` in it gives X (the last box: VideoAuto-R1's `\\boxed{a1}<think>..</think>
  \\boxed{a2}` answers a2, an early exit's lone `\\boxed{a1}` a1);
- TG windows: `2.5 to 7`, `from 2.5 to 7 seconds`, `2.5s - 7s`, `2.5-7`, `[2.5, 7]`,
  `between 2.5 and 7`, clock times `0:02.5 to 1:07`; otherwise the first two times in the
  text; reversed ends are swapped;
- boxes: JSON anywhere in the text (a bare list, `bbox_2d` / `bbox` / `box` / `boxes`, a
  list of such objects: the first counts), else the first four numbers; swapped corners
  are sorted;
- choices: a letter (`B`, `(B)`, `B.`, `the answer is B`, `Option B`) or the text of one
  option; numbers: the first number (`1,200`, `3.5 m`, `three`).

Lenient is not blind: an answer holding garbled text (U+FFFD replacement characters,
control or unassigned code points: a model emitting broken bytes) is no answer, and a TG
window is not read out of tag debris (a `<` or `>` that is not an arrow `->`), so a reply of
`\ufffd>1\ufffd>1` inside `<answer>` is unparsed, not the window (1, 1).

Every parser returns None for text it cannot read and never raises; the metric modules
score None as the worst answer (IoU 0, wrong choice), counted as unparsed.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from typing import Any

from videorl.data.records import LETTERS, Box
from videorl.rewards import payload
from videorl.rewards.payload import MAX_PAYLOAD_CHARS
from videorl.rewards.protocol import (
    ANSWER_CLOSE,
    ANSWER_OPEN,
    BOXED,
    THINK_CLOSE,
    last_answer,
    last_boxed,
)

Window = tuple[float, float]

MAX_JSON_ATTEMPTS = 64  # bracket positions tried by `find_json`; bounds adversarial text

# A time: seconds (`12.5`) or a clock (`1:02`, `1:02:03.5`), never signed. It starts where
# a digit run starts and never gives digits back (possessive), so a search is linear in the
# text length even on a long run of digits.
_TIME = r"(?<![\d.:])(?:\d++(?::\d{1,2}){0,2}(?:\.\d++)?|\.\d++)"
_UNIT = r"(?:\s*(?:s|secs?|seconds?)\b)?"
_SEPARATOR = r"\s*(?:to|and|till|until|through|-|–|—|~|,)\s*"
_SPAN = re.compile(rf"({_TIME}){_UNIT}{_SEPARATOR}({_TIME}){_UNIT}", re.IGNORECASE)
_TIME_TOKEN = re.compile(_TIME)
_TAG_DEBRIS = re.compile(r"<(?![-=])|(?<![-=])>")  # `->` and `=>` are arrows, not debris
_BROKEN = frozenset({"Cc", "Cs", "Co", "Cn"})  # unicodedata categories of broken text
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_NUMBER = re.compile(r"[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][+-]?\d+)?|[+-]?\.\d+")
_WORD_NUMBERS = {
    w: float(i)
    for i, w in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
            "thirteen",
            "fourteen",
            "fifteen",
            "sixteen",
            "seventeen",
            "eighteen",
            "nineteen",
            "twenty",
        ]
    )
}
_WORD = re.compile(r"\b(" + "|".join(_WORD_NUMBERS) + r")\b", re.IGNORECASE)
_STRICT_LETTER = re.compile(r"\(?([A-H])\)?(?:[.:)]\s*.*)?", re.DOTALL)
_CUE_LETTER = re.compile(r"(?i:answer(?:\s+is)?|option|choice)\s*[:=]?\s*\(?([A-H])\)?(?![A-Za-z])")
_PAREN_LETTER = re.compile(r"\(([A-H])\)")
_LEADING_LETTER = re.compile(r"^\s*([A-H])(?:[.:)]|\s*$)")
_MARKED_LETTER = re.compile(r"(?<![A-Za-z])([A-H])[.)](?=\s|$)")
_BOX_KEYS = ("bbox_2d", "bbox", "box", "boxes")


def answer_text(response: str | None) -> str:
    """The part of a response that holds the answer (see the module docstring); "" when
    that part is garbled."""
    text = _answer_part(response[:MAX_PAYLOAD_CHARS] if response else "")
    return "" if garbled(text) else text


def _answer_part(text: str) -> str:
    part = _tagged_part(text)
    boxed = last_boxed(part) if BOXED in part else None
    return boxed.strip() if boxed is not None else part


def _tagged_part(text: str) -> str:
    tagged = last_answer(text)
    if tagged is not None:
        return tagged.strip()
    if ANSWER_OPEN in text:
        return text.rsplit(ANSWER_OPEN, 1)[1].replace(ANSWER_CLOSE, "").strip()
    if THINK_CLOSE in text:
        after = text.rsplit(THINK_CLOSE, 1)[1].strip()
        if after:
            return after
    return text.strip()


def garbled(text: str) -> bool:
    """Whether `text` holds a replacement character or a control, surrogate, private-use or
    unassigned code point (tabs and line breaks aside): broken output, not an answer."""
    return any(
        ch == "\ufffd" or (unicodedata.category(ch) in _BROKEN and ch not in "\t\n\r")
        for ch in text
    )


# ----- numbers and times ------------------------------------------------------------------


def _seconds(token: str) -> float | None:
    """`12.5` -> 12.5; `1:02.5` -> 62.5; `1:02:03` -> 3723."""
    try:
        value = 0.0
        for part in token.split(":"):
            value = value * 60 + float(part)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def parse_window(text: str) -> Window | None:
    """`(start, end)` in seconds from a temporal grounding answer, else None (also for
    text with tag debris, `<` or `>` outside an arrow)."""
    if _TAG_DEBRIS.search(text):
        return None
    match = _SPAN.search(text)
    if match is not None:
        start, end = _seconds(match.group(1)), _seconds(match.group(2))
    else:
        times = _TIME_TOKEN.findall(text)
        if len(times) < 2:
            return None
        start, end = _seconds(times[0]), _seconds(times[1])
    if start is None or end is None:
        return None
    return (min(start, end), max(start, end))


def parse_number(text: str) -> float | None:
    """The first number of the text (`1,200` -> 1200, `3.5 m` -> 3.5, `three` -> 3)."""
    match = _NUMBER.search(text)
    word = _WORD.search(text)
    if match is not None and (word is None or match.start() < word.start()):
        value = float(match.group(0).replace(",", ""))
        return value if math.isfinite(value) else None
    if word is not None:
        return _WORD_NUMBERS[word.group(1).lower()]
    return None


# ----- JSON and boxes ---------------------------------------------------------------------


def find_json(text: str) -> Any | None:
    """The whole text as JSON, else the first JSON object or list that starts at a bracket
    (a ```json fence or prose around it is fine), else None."""
    stripped = text.strip().removeprefix("```json").removeprefix("```").removesuffix("```")
    try:
        return json.loads(stripped)
    except (ValueError, RecursionError):
        pass
    decoder = json.JSONDecoder()
    starts = [m.start() for m in re.finditer(r"[\[{]", text)][:MAX_JSON_ATTEMPTS]
    for start in starts:
        try:
            value, _ = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, (dict, list)):
            return value
    return None


def json_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        value = value.strip()
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None


def as_box(value: Any) -> Box | None:
    """Four finite numbers as a box with sorted corners, else None."""
    if not isinstance(value, (list, tuple)) or len(value) != 4:
        return None
    numbers = [n for n in map(json_number, value) if n is not None]
    if len(numbers) != 4:  # one was not a finite number
        return None
    x1, y1, x2, y2 = numbers
    return (min(x1, x2), min(y1, y2), max(x1, x2), max(y1, y2))


def box_from_json(value: Any) -> Box | None:
    """A box from a JSON value: a list of 4 numbers, an object with a box key, or a list
    whose first item is either."""
    box = as_box(value)
    if box is not None:
        return box
    if isinstance(value, dict):
        for key in _BOX_KEYS:
            if key in value:
                return box_from_json(value[key])
        return None
    if isinstance(value, (list, tuple)) and value and isinstance(value[0], (list, tuple, dict)):
        return box_from_json(value[0])
    return None


def parse_box(text: str) -> Box | None:
    """A box from JSON in the text, else from its first four numbers."""
    box = box_from_json(find_json(text))
    if box is not None:
        return box
    numbers = _PLAIN_NUMBER.findall(text)
    return as_box(numbers[:4]) if len(numbers) >= 4 else None


def keyed_boxes(value: Any) -> dict[float | str, Box]:
    """`{"<frame or second>": box}` with numeric keys as numbers (`"12"` = `"12.0"`); a
    `{"boxes": {...}}` wrapper is unwrapped; unreadable boxes are dropped."""
    if isinstance(value, dict) and isinstance(value.get("boxes"), dict):
        value = value["boxes"]
    return payload.keyed_boxes(value, box_from_json)


# ----- choices ----------------------------------------------------------------------------


def _normalize(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def parse_choice(text: str, options: tuple[str, ...] = ()) -> str | None:
    """An option letter, tried in this order: the strict form (`B`, `(B)`, `B. text`), a cue
    (`the answer is B`, `Option (B)`), a parenthesized `(B)`, a leading `B.`, a marked `B.`
    or `B)` anywhere, then the text of exactly one option.
    Letters beyond the number of options are not answers."""
    valid = LETTERS[: len(options)] if options else LETTERS
    stripped = text.strip()
    for pattern, where in (
        (_STRICT_LETTER, "full"),
        (_CUE_LETTER, "search"),
        (_PAREN_LETTER, "search"),
        (_LEADING_LETTER, "search"),
        (_MARKED_LETTER, "search"),
    ):
        match = pattern.fullmatch(stripped) if where == "full" else pattern.search(stripped)
        if match is not None and match.group(1) in valid:
            return match.group(1)
    said = _normalize(stripped)
    if not said or not options:
        return None
    named = [_normalize(o) for o in options]
    exact = [LETTERS[i] for i, o in enumerate(named) if o and o == said]
    if len(exact) == 1:
        return exact[0]
    inside = [
        LETTERS[i] for i, o in enumerate(named) if o and re.search(rf"\b{re.escape(o)}\b", said)
    ]
    return inside[0] if len(inside) == 1 else None
