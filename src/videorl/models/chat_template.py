"""Keyword arguments for the chat template (`apply_chat_template(..., **kwargs)`).

Qwen3 and Qwen3.5 templates read `enable_thinking`: False writes an empty
`<think>\\n\\n</think>\\n\\n` into the generation prompt (answer-only), True lets the model
reason (some templates open `<think>` themselves). Other templates ignore the variable. So
`enable_thinking` follows the prompt's answer protocol (`data.think`) unless
`data.chat_template_kwargs` sets it; OPDVR and GRPD pass `enable_thinking=False` (their
`data.apply_chat_template_kwargs`), OraRL `enable_thinking: false`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from videorl.errors import ConfigError

SCALARS = (bool, int, float, str, type(None))
MAX_KWARGS = 16  # a request may set at most this many template variables


def check_template_kwargs(value: Any, key: str = "data.chat_template_kwargs") -> dict[str, Any]:
    """A mapping of template variable names to scalars (bool, number, string, null), else a
    one-line `ConfigError` naming `key`."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{key}={value!r} must be a mapping, e.g. {{enable_thinking: false}}")
    if len(value) > MAX_KWARGS:
        raise ConfigError(f"{key} has {len(value)} entries; at most {MAX_KWARGS} are allowed")
    for name, item in value.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise ConfigError(f"{key}: {name!r} is not a template variable name")
        if not isinstance(item, SCALARS):
            raise ConfigError(f"{key}.{name}={item!r} must be a bool, number, string or null")
    return dict(value)


def template_kwargs(think: bool, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """`{"enable_thinking": think}` updated with `extra` (which wins)."""
    return {"enable_thinking": bool(think), **(extra or {})}


def used_by_template(kwargs: Mapping[str, Any], owner: Any) -> dict[str, Any]:
    """The `kwargs` that `owner`'s (processor or tokenizer) chat template mentions. A variable
    the template never reads changes nothing it renders, but a processor takes it for a
    processor argument and transformers warns on every call."""
    template = getattr(owner, "chat_template", None)
    source = " ".join(template.values()) if isinstance(template, dict) else (template or "")
    return {name: value for name, value in kwargs.items() if name in source}
