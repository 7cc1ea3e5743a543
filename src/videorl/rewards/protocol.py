"""The answer protocol (docs/methods.md#answer-protocol): an optional `<think>...</think>`
block, then exactly one `<answer>...</answer>` with nothing after it; with thinking required,
each of the four tags exactly once. `format = 1` iff the response has that shape.

Checks use tag counts and `str.partition` rather than one regular expression, so that the
cost is linear in the response length whatever the response contains.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
ANSWER_OPEN, ANSWER_CLOSE = "<answer>", "</answer>"
# The empty reasoning block of Qwen3's non-thinking template: the annotation row's reasoning
# when a thinking format is asked for.
EMPTY_THINK = "<think>\n\n</think>\n\n"


@dataclass(frozen=True)
class Extraction:
    """What the protocol found in a response.

    `ok`: the response has the required shape (format = 1). `payload`: the answer text; when
    not ok, the last complete answer (for diagnostics only: the reward is task * format = 0).
    """

    ok: bool
    payload: str | None


@dataclass(frozen=True)
class Protocol:
    """How a family's answer sits in a response: `extract(response, think_required)` and its
    inverse `wrap(payload, think)`."""

    extract: Callable[[str, bool], Extraction]
    wrap: Callable[[str, bool], str]


def split_think(response: str, think_required: bool) -> tuple[bool, str]:
    """(shape ok, the text after the think block). The block, when present, must be the
    only one and open the response (whitespace aside). Its opening tag is optional: a chat
    template may write `<think>` into the prompt (Qwen3.5 thinking mode), so the response
    starts inside the block, `reasoning</think><answer>..</answer>` (as OraRL's parser,
    `(?:<think>)?.*?</think>`)."""
    opens, closes = response.count(THINK_OPEN), response.count(THINK_CLOSE)
    if opens == 0 and closes == 0:
        return (not think_required, response)
    head, _, rest = response.rpartition(THINK_CLOSE)
    if closes != 1 or opens > 1:
        return (False, rest)
    return (opens == 0 or head.lstrip().startswith(THINK_OPEN), rest)


def last_answer(response: str) -> str | None:
    """The text of the last complete `<answer>...</answer>` block, if any."""
    start = response.rfind(ANSWER_OPEN)
    if start < 0:
        return None
    end = response.find(ANSWER_CLOSE, start)
    return None if end < 0 else response[start + len(ANSWER_OPEN) : end]


def extract_tagged(response: str, think_required: bool) -> Extraction:
    """The `<answer>` payload of a response and whether the response follows the protocol."""
    think_ok, rest = split_think(response, think_required)
    if response.count(ANSWER_OPEN) != 1 or response.count(ANSWER_CLOSE) != 1:
        return Extraction(False, last_answer(response))
    before, _, tail = rest.partition(ANSWER_OPEN)
    payload, closed, after = tail.partition(ANSWER_CLOSE)
    if not closed:  # the answer block is not after the think block, or closes before it opens
        return Extraction(False, last_answer(response))
    ok = think_ok and not before.strip() and not after.strip()
    return Extraction(ok, payload)


def wrap_tagged(payload: str, think: bool) -> str:
    """`<answer>payload</answer>`, after an empty think block when `think`."""
    return (EMPTY_THINK if think else "") + ANSWER_OPEN + payload + ANSWER_CLOSE


TAGGED = Protocol(extract=extract_tagged, wrap=wrap_tagged)


# ----- the `\\boxed{}` answer (math, VideoAuto-R1) -----

BOXED = "\\boxed"
# A final answer is short; longer text is not checked (sympy on megabytes could take minutes).
MAX_ANSWER_CHARS = 1_000
_OPENING = re.compile(r"\s*\{")
_BRACE = re.compile(r"\\.|[{}]", re.DOTALL)


def last_boxed(text: str) -> str | None:
    """The content of the last `\\boxed{...}`, or None when there is none, it is unclosed, or
    it is longer than `MAX_ANSWER_CHARS` (not a final answer)."""
    start = text.rfind(BOXED)
    if start < 0:
        return None
    opening = _OPENING.match(text, start + len(BOXED))
    if opening is None:
        return None
    first = opening.end()
    depth = 1
    for token in _BRACE.finditer(text, first, first + MAX_ANSWER_CHARS + 1):
        depth += {"{": 1, "}": -1}.get(token.group(0), 0)  # an escape like `\{` does not nest
        if depth == 0:
            return text[first : token.start()]
    return None


def extract_boxed(response: str, think_required: bool) -> Extraction:
    """The final boxed answer and whether the response has the required shape."""
    think_ok, rest = split_think(response, think_required)
    content = last_boxed(rest)
    if content is None:
        return Extraction(False, last_boxed(response))
    return Extraction(think_ok, content)


def wrap_boxed(payload: str, think: bool) -> str:
    """`\\boxed{payload}`, after an empty think block when `think`."""
    return (EMPTY_THINK if think else "") + BOXED + "{" + payload + "}"


BOXED_PROTOCOL = Protocol(extract=extract_boxed, wrap=wrap_boxed)
