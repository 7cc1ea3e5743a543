"""A named registry of extension points (advantage estimators, policy losses, task
families): entries added by the modules that define them, the built-in modules imported on
first lookup, unknown names refused with the valid ones listed."""

from __future__ import annotations

import difflib
import importlib
from typing import Any, TypeVar

from videorl.errors import ConfigError

Entry = TypeVar("Entry")


class Registry(dict[str, Entry]):
    """`name -> entry`; `what` ("advantage estimator") and `key` ("algorithm.estimator")
    word the errors; `builtins` are the modules whose decorators fill it."""

    def __init__(self, what: str, key: str, builtins: tuple[str, ...]) -> None:
        super().__init__()
        self.what, self.key, self.builtins = what, key, builtins

    def add(self, name: str, entry: Entry, fn: Any) -> None:
        """Register `entry` (wrapping `fn`); another function under a taken name is refused."""
        owner = getattr(self[name], "fn", None) if name in self else fn
        if owner is not fn:
            raise ConfigError(
                f"{self.what} {name!r} is already registered by "
                f"{owner.__module__}; pick another name"
            )
        self[name] = entry

    def lookup(self, name: str) -> Entry:
        """The entry under `name`; an unknown name is a ConfigError listing the valid ones."""
        self._load_builtins()
        if name not in self:
            close = difflib.get_close_matches(name, self, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(
                f"{self.key}={name!r} is not a registered {self.what}{hint}; valid: {sorted(self)}"
            )
        return self[name]

    def names(self) -> list[str]:
        self._load_builtins()
        return sorted(self)

    def _load_builtins(self) -> None:
        for module in self.builtins:
            importlib.import_module(module)
