"""Bounded, lenient parsing of answer payloads, and the compact number/JSON formatting of
serialized annotations.

Parsing never raises: each helper returns None for anything that is not a clean, finite
value, so that unparseable or adversarial model output scores 0 (docs/methods.md#rewards).
Formatting is the inverse: `parse(format(x)) == x` exactly, which is what lets a
serialized annotation score exactly 1.0.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from videorl.data.records import Box

Point = tuple[float, float]

# A real answer is a few hundred characters; a cap keeps a 1 MB adversarial string from
# costing more than a length check.
MAX_PAYLOAD_CHARS = 100_000
# Any float written out positionally fits (5e-324 takes 326 characters).
MAX_NUMBER_CHARS = 400

NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
_NUMBER = re.compile(NUMBER)
_FENCE = re.compile(r"```(?:json)?\s*(.*?)\s*```", re.DOTALL | re.IGNORECASE)
# "B", "(B)", "B.", "B)", "B:", optionally followed by the option text after a separator;
# a bare letter followed by more words ("A or B") is not an answer.
_LETTER = re.compile(r"\(([A-H])\)[.:]?(?:\s.*)?|([A-H])(?:[.:)](?:\s.*)?)?", re.DOTALL)


def finite(value: Any) -> float | None:
    """A finite float from a JSON number; bools, strings, NaN and inf are not numbers."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:  # an int too large for a float
        return None
    return number if math.isfinite(number) else None


def _bounded_match(pattern: re.Pattern[str], text: str, limit: int) -> re.Match[str] | None:
    """`pattern` over all of the stripped `text`; None past `limit` characters (no regex is
    run on an oversized payload)."""
    return None if len(text) > limit else pattern.fullmatch(text.strip())


def parse_number(text: str) -> float | None:
    """A finite number written as decimal text (`12`, `-0.5`, `1e3`), else None."""
    match = _bounded_match(_NUMBER, text, MAX_NUMBER_CHARS)
    if match is None:
        return None
    number = float(match.group(0))
    return number if math.isfinite(number) else None


def parse_letter(payload: str) -> str | None:
    """An option letter A-H (`B`, `(B)`, `B.`, `B. option text`), else None."""
    match = _bounded_match(_LETTER, payload, MAX_PAYLOAD_CHARS)
    if match is None:
        return None
    return match.group(1) or match.group(2)


def load_json(payload: str) -> Any | None:
    """The JSON value of a payload (a ```json fence is removed), else None."""
    if len(payload) > MAX_PAYLOAD_CHARS:
        return None
    text = payload.strip()
    fenced = _FENCE.fullmatch(text)
    if fenced is not None:
        text = fenced.group(1)
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: deeply nested brackets
        return None


def as_box(value: Any) -> Box | None:
    """A box `[x1, y1, x2, y2]` of finite numbers with x1 <= x2 and y1 <= y2, else None."""
    if not isinstance(value, (list, tuple)) or len(value) != 4:
        return None
    numbers = [n for n in (finite(v) for v in value) if n is not None]
    if len(numbers) != 4:
        return None
    x1, y1, x2, y2 = numbers
    if x2 < x1 or y2 < y1:
        return None
    return (x1, y1, x2, y2)


def as_points(value: Any) -> list[Point] | None:
    """A list of `[x, y]` points of finite numbers, else None."""
    if not isinstance(value, (list, tuple)):
        return None
    points = []
    for item in value:
        if not isinstance(item, (list, tuple)) or len(item) != 2:
            return None
        x, y = finite(item[0]), finite(item[1])
        if x is None or y is None:
            return None
        points.append((x, y))
    return points


def as_window(value: Any) -> tuple[float, float] | None:
    """A time window `[start, end]` with 0 <= start <= end, else None."""
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        return None
    start, end = finite(value[0]), finite(value[1])
    if start is None or end is None or not 0 <= start <= end:
        return None
    return (start, end)


def keyed_boxes(
    value: Any, read_box: Callable[[Any], Box | None] = as_box
) -> dict[float | str, Box]:
    """`{"<frame or second>": box}` with numeric keys as numbers; boxes that `read_box`
    cannot read are dropped.

    Keys are compared numerically so that `"12"`, `"12.0"` and `"12.00"` name the same frame;
    the first occurrence of a key wins.
    """
    if not isinstance(value, dict):
        return {}
    boxes: dict[float | str, Box] = {}
    for key, raw in value.items():
        box = read_box(raw)
        name = key_value(str(key))
        if box is not None and name not in boxes:
            boxes[name] = box
    return boxes


def key_value(key: str) -> float | str:
    """A frame or second key as a number, or the stripped text when it is not one."""
    number = parse_number(key)
    return key.strip() if number is None else number


def format_number(value: float) -> str:
    """The shortest decimal text that reads back as exactly `value` (`7`, `2.5`, `0.00001`)."""
    if value == 0:
        return "0"  # also for -0.0
    return np.format_float_positional(float(value), unique=True, trim="-")


def compact_json(value: Any) -> str:
    """JSON without spaces, numbers in `format_number` form (`{"time":[2.5,7]}`)."""
    if isinstance(value, dict):
        items = (
            f"{json.dumps(str(k), ensure_ascii=False)}:{compact_json(v)}" for k, v in value.items()
        )
        return "{" + ",".join(items) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(compact_json(v) for v in value) + "]"
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return format_number(value)
    return json.dumps(value, ensure_ascii=False)
