"""How OraRL's reward adapters read answers (`reward.mode: orarl`), and what several
families' adapters share.

Each family's adapter (`tasks/<family>/orarl.py`) is re-implemented from
`orarl/rewards/adapters/*.py` in HVision-NKU/OraRL (commit e3903be): it returns (format,
components) with `task` = OraRL's `accuracy`, and the router sets `overall = task * format`
as OraRL does; math has no OraRL adapter and keeps videorl's scorer. This module follows
`orarl/rewards/adapters/_common.py`; videorl's own parsing is `protocol` and `payload`.
What OraRL reads differently from us:

- the answer (`canonical_payload`): optionally anything up to a `</think>` (several
  `</think>` tags, text before `<think>`, `<answer>` inside the reasoning all pass), then
  one `<answer>...</answer>` that ends the response; tags in any letter case; the
  payload is stripped and an empty one is no answer;
- numbers: `[-+]?(\\d+(\\.\\d+)?|\\.\\d+)` in text (no exponent); in JSON any value
  `float()` reads (numeric strings such as `"12"` too), booleans and non-finite values
  excepted (`finite`);
- boxes (`box`): a 4-list, or the first box inside nested lists or under `bbox_2d`,
  `bbox`, `box`, `boxes`; inverted corners are kept (their area is 0), or sorted with
  `reorder`; frame-keyed boxes (`frame_boxes`) keep integer keys only (`"12.0"` is `"12"`,
  `"12.5"` is dropped);
- lenient JSON (`json_value`): the last `<answer>` block, an optional ```` ```json ````
  fence, then the first `[` or `{` from which a JSON value decodes.

The scans are linear in the response length (tag positions found once), where OraRL's
regular expressions backtrack; they accept exactly the same strings.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

NUMBER = r"[-+]?(?:\d+(?:\.\d+)?|\.\d+)"
_THINK_OPEN = re.compile(r"<think>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)
_ANSWER_OPEN = re.compile(r"<answer>", re.IGNORECASE)
_ANSWER_CLOSE = re.compile(r"</answer>", re.IGNORECASE)
_OPENS_ANSWER = re.compile(r"\s*<answer>", re.IGNORECASE)
_ENDS_ANSWER = re.compile(r"</answer>\s*\Z", re.IGNORECASE)
_FENCED = re.compile(r"\s*```(?:json)?\s*(.*?)\s*```\s*", re.DOTALL | re.IGNORECASE)


def finite(value: Any) -> float | None:
    """`float(value)` when finite; None for booleans, non-numbers and inf / NaN. An int too
    large for a float raises, as in OraRL (the router scores that sample 0)."""
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def finite_all(values: Iterable[Any]) -> list[float] | None:
    """`finite` of every one of `values` (each is converted, so a too-large int raises), or
    None when any is not a finite number."""
    numbers = [finite(value) for value in values]
    kept = [number for number in numbers if number is not None]
    return kept if len(kept) == len(numbers) else None


def is_sequence(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes))


def canonical_payload(response: str) -> str | None:
    """The stripped payload of a response of OraRL's canonical shape, else None.

    The shape: `[anything </think>] <answer> payload </answer>`, whitespace around; the
    earliest `</think>` followed by `<answer>` opens the answer, else the response itself
    must open with `<answer>`; the answer closes at the `</answer>` that ends the response.
    """
    ending = _ENDS_ANSWER.search(response)
    if ending is None:
        return None
    close = ending.start()
    starts = [tag.end() for tag in _THINK_CLOSE.finditer(response, 0, close)]
    for start in [*starts, 0]:
        opening = _OPENS_ANSWER.match(response, start)
        if opening is not None and opening.end() <= close:
            return response[opening.end() : close].strip() or None
    return None


def last_answer_block(value: Any) -> str:
    """The stripped text of the last `<answer>...</answer>` block (each opening tag pairs
    with the next closing one), else the whole stripped text."""
    text = str(value or "").strip()
    found, position = None, 0
    while (opening := _ANSWER_OPEN.search(text, position)) is not None:
        closing = _ANSWER_CLOSE.search(text, opening.end())
        if closing is None:
            break
        found, position = text[opening.end() : closing.start()], closing.end()
    return text if found is None else found.strip()


def without_reasoning(value: Any) -> str:
    """The response with every complete `<think>...</think>` block removed, the text after
    a stray `</think>`, then its last answer block (OraRL's `final_response_text`)."""
    text = str(value or "").strip()
    kept, position = [], 0
    while (opening := _THINK_OPEN.search(text, position)) is not None:
        closing = _THINK_CLOSE.search(text, opening.end())
        if closing is None:
            break
        kept.append(text[position : opening.start()])
        position = closing.end()
    text = ("".join(kept) + text[position:]).strip()
    if "</think>" in text.lower():
        text = _THINK_CLOSE.split(text)[-1].strip()
    return last_answer_block(text)


def unfence(value: Any) -> str:
    """The inside of one ```` ``` ```` / ```` ```json ```` fence spanning the whole text,
    else the stripped text."""
    text = str(value or "").strip()
    fenced = _FENCED.fullmatch(text)
    return text if fenced is None else fenced.group(1).strip()


def json_value(value: Any) -> Any:
    """A JSON value read leniently (module docstring); lists and mappings pass through."""
    if isinstance(value, (Mapping, list, tuple)):
        return value
    text = unfence(last_answer_block(value))
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        pass
    decoder = json.JSONDecoder()
    for index, character in enumerate(text):
        if character in "[{":
            try:
                return decoder.raw_decode(text, index)[0]
            except ValueError:
                continue
    return None


def json_mapping(value: Any) -> dict[str, Any] | None:
    found = json_value(value)
    return dict(found) if isinstance(found, Mapping) else None


def mapping_or_literal(value: Any) -> dict[str, Any] | None:
    """`json_mapping`, else a Python dict literal (`{'boxes': ...}`), else None."""
    found = json_mapping(value)
    if found is not None or not isinstance(value, str):
        return found
    try:
        literal = ast.literal_eval(value)
    except (SyntaxError, ValueError):
        return None
    return dict(literal) if isinstance(literal, Mapping) else None


BOX_KEYS = ("bbox_2d", "bbox", "box", "boxes")


def box(value: Any, *, reorder: bool = False) -> list[float] | None:
    """The first box `[x1, y1, x2, y2]` in `value` (module docstring), else None."""
    if isinstance(value, Mapping):
        for key in BOX_KEYS:
            if key in value and (found := box(value[key], reorder=reorder)) is not None:
                return found
        return None
    if not is_sequence(value):
        return None
    if len(value) == 4:
        numbers = finite_all(value)
        if numbers is not None:
            x1, y1, x2, y2 = numbers
            if reorder:
                (x1, x2), (y1, y2) = sorted((x1, x2)), sorted((y1, y2))
            return [x1, y1, x2, y2]
    for item in value:
        if (found := box(item, reorder=reorder)) is not None:
            return found
    return None


def frame_boxes(value: Any) -> dict[str, list[float]]:
    """`{"<integer frame>": box}` of a mapping; keys that are not whole numbers, and values
    without a box, are dropped; a later key naming the same frame wins."""
    if not isinstance(value, Mapping):
        return {}
    boxes: dict[str, list[float]] = {}
    for key, raw in value.items():
        number, found = finite(key), box(raw)
        if number is not None and found is not None and number.is_integer():
            boxes[str(int(number))] = found
    return boxes


def box_iou(first: Any, second: Any) -> float:
    """IoU of two boxes (`box` reads each); 0 without both or with an empty union."""
    a, b = box(first), box(second)
    if a is None or b is None:
        return 0.0
    width = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    height = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = width * height
    area_a = max(0.0, a[2] - a[0]) * max(0.0, a[3] - a[1])
    area_b = max(0.0, b[2] - b[0]) * max(0.0, b[3] - b[1])
    union = area_a + area_b - inter
    return inter / union if union > 0.0 else 0.0


def interval_iou(first: Any, second: Any) -> float:
    """tIoU of two `[start, end]` pairs, each sorted first; 0 for anything else."""
    if not (is_sequence(first) and is_sequence(second) and len(first) == len(second) == 2):
        return 0.0
    values = finite_all((*first, *second))
    if values is None:
        return 0.0
    a0, a1 = sorted(values[:2])
    b0, b1 = sorted(values[2:])
    inter = max(0.0, min(a1, b1) - max(a0, b0))
    union = max(a1, b1) - min(a0, b0)
    return inter / union if union > 0.0 else 0.0


# ----- shared by several families' adapters -----


def strict_object(payload: str | None) -> Any:
    """The payload parsed as strict JSON (no fence, no surrounding text), else None."""
    if payload is None:
        return None
    try:
        return json.loads(payload)
    except ValueError:
        return None


def boxes_of(data: Any) -> tuple[dict[str, list[float]], bool]:
    """(frame boxes, every key kept) of `data["boxes"]` when it is a mapping."""
    raw = data.get("boxes") if isinstance(data, Mapping) else None
    if not isinstance(raw, Mapping):
        return {}, False
    boxes = frame_boxes(raw)
    return boxes, bool(boxes) and len(boxes) == len(raw)


def mean_iou(predicted: dict[str, list[float]], target: dict[str, list[float]]) -> float:
    if not target:
        return 0.0
    return sum(box_iou(predicted.get(frame), gt) for frame, gt in target.items()) / len(target)


def coverage(predicted: dict[str, list[float]], target: dict[str, list[float]]) -> float:
    return sum(frame in predicted for frame in target) / len(target) if target else 0.0


def bare_letter(text: str, letters: str) -> str:
    found = re.fullmatch(rf"\s*([{letters}])\s*", text, re.IGNORECASE)
    return "" if found is None else found.group(1).upper()


def choice_reward(predicted: str, target: str) -> tuple[float, dict[str, float]]:
    correct = float(bool(predicted) and bool(target) and predicted == target)
    return float(bool(predicted)), {"task": correct}
