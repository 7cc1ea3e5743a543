"""The tool calls of a multi-turn row, as reward functions see them (docs/tools.md).

A reward plug-in that declares a `calls` parameter, `function(record, response, config,
calls)`, receives the calls its row made, in order; every other reward (the built-in
families, plug-ins without the parameter) is called as before and never sees them.

With `rollout.frame_search.verify` (TimeSearch-R's completeness self-verification) a row's
calls end with a pseudo-call `VERIFICATION_CALL` whose `arguments["answer"]` is the policy's
answer from only the frames the row's tools returned (`rollout/verification.py`).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ToolCallMade:
    """One call of a trajectory: the tool asked for (`?` when the call did not parse), its
    arguments, whether it ran (`ok`; else `error` says why), its seconds, the model turn
    (1-based) that made it and that turn's text (so that a reward can read the whole
    trajectory: the calling turns' texts, then the final `response`)."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    ok: bool = True
    error: str | None = None
    seconds: float = 0.0
    turn: int = 1
    turn_text: str = ""


@functools.cache
def takes_calls(function: Callable[..., Any]) -> bool:
    """Whether `function` declares a `calls` parameter (or `**kwargs`)."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature
        return False
    return any(p.name == "calls" or p.kind is p.VAR_KEYWORD for p in parameters)


def trajectory_text(response: str, calls: Sequence[ToolCallMade]) -> str:
    """Every model turn of a row in order: each calling turn's text once, then the final
    turn `response` (what verl and AReaL decode as a multi-turn row's completion, the tool
    turns left out)."""
    turns = {call.turn: call.turn_text for call in calls}
    return "".join(turns[turn] for turn in sorted(turns)) + response


VERIFICATION_CALL = "completeness_check"


def verification_call(answer: str) -> ToolCallMade:
    """The completeness check's answer as the row's last call (turn 0: no model turn)."""
    return ToolCallMade(name=VERIFICATION_CALL, arguments={"answer": answer}, turn=0)


def verification_answer(calls: tuple[ToolCallMade, ...] | list[ToolCallMade]) -> str | None:
    """The completeness check's answer among `calls`, None when it did not run."""
    for call in reversed(calls):
        if call.name == VERIFICATION_CALL:
            return str(call.arguments.get("answer", ""))
    return None
