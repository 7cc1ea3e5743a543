"""Tool calls in a response, in Qwen's format: `<tool_call>{"name": ..., "arguments":
{...}}</tool_call>` (Qwen2.5, Qwen3, Qwen3-VL and Qwen3.5 chat templates; the Hermes format).

`parse_tool_calls` never raises: a call whose JSON is broken, lacks a name, or is left
unclosed at the end of the response comes back with its `error` set, so the runner reports
it to the model and counts it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

OPEN, CLOSE = "<tool_call>", "</tool_call>"
_CALL = re.compile(re.escape(OPEN) + r"(.*?)" + re.escape(CLOSE), re.DOTALL)


@dataclass(frozen=True)
class ToolCall:
    """One call as the model wrote it: `name` and `arguments`, or `error` when unreadable."""

    raw: str
    name: str | None = None
    arguments: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


def _parse_one(raw: str) -> ToolCall:
    try:
        payload = json.loads(raw.strip())
    except json.JSONDecodeError as err:
        return ToolCall(raw, error=f"the tool call is not valid JSON ({err.msg} at {err.pos})")
    if not isinstance(payload, dict) or not isinstance(payload.get("name"), str):
        return ToolCall(raw, error='a tool call must be {"name": ..., "arguments": {...}}')
    arguments = payload.get("arguments", {})
    if isinstance(arguments, str):  # OpenAI style: arguments as a JSON string
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as err:
            return ToolCall(raw, payload["name"], error=f"arguments are not valid JSON ({err.msg})")
    if not isinstance(arguments, dict):
        return ToolCall(raw, payload["name"], error="arguments must be a JSON object")
    return ToolCall(raw, payload["name"], arguments)


def parse_tool_calls(text: str) -> list[ToolCall]:
    """Every `<tool_call>...</tool_call>` in `text`, in order, plus an unclosed one at the end."""
    calls = [_parse_one(m.group(1)) for m in _CALL.finditer(text)]
    tail = text[text.rfind(CLOSE) + len(CLOSE) :] if CLOSE in text else text
    if OPEN in tail:
        raw = tail[tail.index(OPEN) + len(OPEN) :]
        calls.append(ToolCall(raw, error=f"the tool call is not closed with {CLOSE}"))
    return calls
