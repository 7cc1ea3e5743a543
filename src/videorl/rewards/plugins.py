"""User reward plug-ins: `"module:function"` strings resolved to callables (issue 4.9).

A plug-in is called as `function(record, response, config)` (plus `calls=`, the row's tool
calls, when it declares that parameter: `rewards/calls.py`) and returns a mapping with at
least `format`, `task` and `overall` (numbers in [0, 1]; extra keys are kept as components),
and optionally `counters`: a mapping of counts of what scoring did (the LLM judge's calls and
failures), not reward terms, which the step sums over its rows as `reward/<name>`.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Mapping
from typing import Any

from videorl.errors import ConfigError

REQUIRED_COMPONENTS = ("format", "task", "overall")
COUNTERS = "counters"  # the plug-in's optional mapping of counts, kept apart from its terms


@functools.cache
def load_plugin(spec: str) -> Callable[..., Mapping[str, Any]]:
    """Import `module:function` (the function part may be dotted, `module:Class.method`)."""
    module_name, sep, attribute = str(spec).partition(":")
    if not sep or not module_name or not attribute:
        raise ConfigError(
            f"reward.plugins: {spec!r} is not of the form 'module:function'; "
            "write e.g. 'my_rewards:score_tg' with my_rewards importable"
        )
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(
            f"reward.plugins: cannot import module {module_name!r} of {spec!r} ({exc}); "
            "put it on PYTHONPATH or fix the name"
        ) from None
    for part in attribute.split("."):
        target = getattr(target, part, None)
    if not callable(target):
        raise ConfigError(
            f"reward.plugins: {spec!r}: module {module_name!r} has no callable {attribute!r}; "
            "define it or fix the name"
        )
    return target


def plugin_components(spec: str, output: Any) -> dict[str, Any]:
    """Check a plug-in's return value; the message names the plug-in and the missing key."""
    if not isinstance(output, Mapping):
        raise TypeError(f"reward plugin {spec} returned {type(output).__name__}, not a mapping")
    missing = [key for key in REQUIRED_COMPONENTS if key not in output]
    if missing:
        raise KeyError(f"reward plugin {spec} returned no {', '.join(missing)}")
    return dict(output)
