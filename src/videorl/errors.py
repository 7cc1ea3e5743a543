"""Exceptions a user can act on: each message names the thing, the value and the fix.

A fix that names a training key (`set data.video_root`) is written through `fix`, which
returns it as the running command takes it: as is in `videorl train` / `sft`, as a flag in
`videorl eval` (`spelled_fixes(EVAL_FIXES)` around its work, `eval/commands.py`), so no
command recommends what it would reject.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from contextvars import ContextVar

_FIXES: ContextVar[Mapping[str, str] | None] = ContextVar("videorl_fixes", default=None)


def fix(training: str) -> str:
    """`training` (a fix in the training config's words) as the running command spells it."""
    return (_FIXES.get() or {}).get(training, training)


@contextlib.contextmanager
def spelled_fixes(fixes: Mapping[str, str]) -> Iterator[None]:
    """Within the block, `fix` answers from `fixes` (training words -> this command's)."""
    token = _FIXES.set(fixes)
    try:
        yield
    finally:
        _FIXES.reset(token)


class VideoRLError(Exception):
    """Base class for videorl errors."""


class ConfigError(VideoRLError, ValueError):
    """An invalid configuration key, value or combination (raised at load time)."""


class DataError(VideoRLError, ValueError):
    """A malformed record or data file (names the file, line and field)."""


class MediaError(VideoRLError, OSError):
    """A video or image that is missing, empty, corrupt or cannot be decoded."""


class RolloutWorkerError(VideoRLError, RuntimeError):
    """An async rollout worker died, failed or stopped answering (names the worker)."""


class InputMismatchError(VideoRLError, RuntimeError):
    """A forward would take other inputs than the rollout's (names the row and the first
    difference; `rollout/fingerprints.py`)."""
