"""A Hugging Face Hub id or a local path: which one a model or data value means.

`org/name` may be either; a value is taken as local, checked on disk at once and never sent
to the Hub (no network retries), when it cannot be an id or its first part is a folder here:
`./runs/x`, `/abs/x`, `runs/quickstart/sft/final` (three parts), `runs/nope` when `runs/`
exists. Everything else (`Qwen/Qwen2.5-VL-7B-Instruct`, `gpt2`) is resolved on the Hub.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

# The Hub's spelling of a repo id: one `/`, names of letters, digits, `-`, `_`, `.`
# (huggingface_hub.utils.validate_repo_id), with an optional `@revision`.
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*(@[^/\s]+(/[^\s]+)?)?")


def looks_local(value: str | os.PathLike[str]) -> bool:
    """Whether `value` names a local path rather than a Hub id: it has a path separator and
    is not `org/name`, or its first part exists on disk."""
    text = os.fspath(value)
    separators = "/" + (os.sep if os.sep != "/" else "") + (os.altsep or "")
    if not any(sep in text for sep in separators):
        return False
    if not _HUB_ID.fullmatch(text):
        return True
    return Path(text.split("/", 1)[0]).exists()


def refuse_missing_local(value: str | os.PathLike[str], key: str) -> None:
    """A one-line `ConfigError` at once when `value` looks local and nothing is there,
    naming the quickstart command that makes it when one does."""
    from videorl.errors import ConfigError
    from videorl.quickstart import next_command

    if looks_local(value) and not Path(value).exists():
        fix = next_command(value) or "; fix the path (a Hub id is org/name)"
        raise ConfigError(f"{key} {os.fspath(value)!r} does not exist{fix}")
