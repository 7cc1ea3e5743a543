"""Exceptions a user can act on: each message names the thing, the value and the fix."""


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
