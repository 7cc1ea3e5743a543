"""The config's keys, checked before the config's modules load: a typo in a recipe or an
override is reported in well under a second.

`videorl.config` imports the sections' owners (algorithms, models, video), and with them
torch and torchvision: several seconds before a one-character typo could be reported.
`config/keys.json` holds each section's keys, generated from the dataclasses by the
reference generator's `--keys` (`tests/config/test_keys.py` checks it is current and names
the command), and `check_keys` reports an unknown key with the same line as the full loader.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from videorl.config.loader import merge_sources, unknown_key

KEYS_FILE = Path(__file__).with_name("keys.json")
RETIRED_SECTIONS = ("eval",)  # read by nothing; `videorl.config` drops them too


@cache
def key_table() -> dict[str, list[str]]:
    """Section (`""`, `model`, `algorithm.pruning`, ...) -> its keys in declaration order."""
    table: dict[str, list[str]] = json.loads(KEYS_FILE.read_text(encoding="utf-8"))
    return table


def check_keys(source: dict[str, Any], table: dict[str, list[str]] | None = None) -> None:
    """Raise the loader's `ConfigError` for the first key of `source` (a merged recipe) that
    its section does not have; values are left to the full loader."""
    sections = key_table() if table is None else table
    top = {k: v for k, v in source.items() if k not in RETIRED_SECTIONS}
    pending: list[tuple[str, dict[str, Any]]] = [("", top)]
    while pending:
        section, data = pending.pop(0)
        names = sections[section]
        prefix = f"{section}." if section else ""
        for key, value in data.items():
            if key not in names:
                raise unknown_key(key, names, prefix)
            if f"{prefix}{key}" in sections and isinstance(value, dict):
                pending.append((f"{prefix}{key}", value))


def check_recipe_keys(path: str | Path | None, overrides: list[str]) -> None:
    """`check_keys` of a recipe file with its overrides (YAML and override syntax errors are
    the loader's one-line errors too)."""
    check_keys(merge_sources(path, overrides))
