"""Where a video or image comes from: a file (optionally a clip) or inline frames."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from videorl.errors import DataError


@dataclass(frozen=True)
class MediaRef:
    """A video or image: a file path (optionally a clip [start, end] in seconds) or inline
    frames (uint8 array T x H x W x C) with their fps."""

    path: str | None = None
    start: float | None = None
    end: float | None = None
    frames: Any = None
    fps: float | None = None

    def __post_init__(self) -> None:
        if self.path is None and self.frames is None:
            raise DataError("media reference needs a 'path' or inline 'frames'")
        if self.start is not None and self.end is not None and self.end <= self.start:
            raise DataError(f"media clip end={self.end} must be greater than start={self.start}")

    def to_dict(self) -> dict[str, Any]:
        if self.frames is not None:
            raise DataError("inline frames cannot be written to JSON; save them as a video file")
        out: dict[str, Any] = {"path": self.path}
        if self.start is not None:
            out["start"] = self.start
        if self.end is not None:
            out["end"] = self.end
        return out
