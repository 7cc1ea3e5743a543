"""The tool registry: `@register_tool` adds a named function with a JSON-schema signature.

A tool is `fn(ctx: ToolContext, **arguments) -> ToolResult | str`. Its arguments are checked
against `parameters` (`tools/schema.py`) before it runs, so a tool body sees only valid
values; it signals a bad request it can only detect itself (a time outside the video) by
raising `ToolError`, whose message goes back to the model. `ToolRunner` (`tools/runner.py`)
runs calls under each tool's time limit and turns every failure into a counted error.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any

from videorl.config.constraints import Checked, Gt
from videorl.errors import ConfigError
from videorl.rollout.tools.schema import check_schema
from videorl.video.decode import DecodedVideo, VideoConfig
from videorl.video.media import MediaRef


class ToolError(Exception):
    """A bad request a tool detects itself; its message is shown to the model."""


@dataclass(frozen=True)
class ToolResult:
    """What a tool returns: text for the model and media (images: T = 1, or clips) shown in
    the tool turn after the text, in order. `under_control`: the media already show the
    context's video control (the built-in video tools read the controlled video itself,
    `video.controls.ControlledTimeline`); otherwise the runner puts them under it."""

    text: str
    media: tuple[DecodedVideo, ...] = ()
    under_control: bool = False


@dataclass(frozen=True)
class VideoToolLimits:
    """Bounds on what one video-tool call may decode."""

    # Most frames one get_clip call returns (even, >= 2).
    max_frames: int = 16
    # Highest frame rate get_clip may ask for, frames per second.
    max_fps: float = 8.0
    # Pixel budget of one returned clip (frames x area); frames shrink to fit.
    total_pixels: int = 16 * 256 * 28 * 28


class ToolDecodes:
    """Decodes made by tools during one step, by (media, window, sampling): a call repeated
    in another row or turn is decoded once. `clear()` at the end of the step."""

    def __init__(self) -> None:
        self._store: dict[Any, DecodedVideo] = {}
        self.decodes = 0
        self.hits = 0

    def get(self, key: Any, decode: Callable[[], DecodedVideo]) -> DecodedVideo:
        found = self._store.get(key)
        if found is not None:
            self.hits += 1
            return found
        video = decode()
        self._store[key] = video
        self.decodes += 1
        return video

    def clear(self) -> None:
        self._store.clear()


@dataclass
class ToolContext:
    """What a tool call may read: the row's original media (the file or inline frames, not
    the prompt's sampled frames), the prompt's decoded video (its duration and frame size),
    the run's video settings, the step's decode cache and the limits (by default
    `VideoToolLimits` with the run's `video.tool_max_frames`)."""

    media: MediaRef | None = None
    video: DecodedVideo | None = None
    config: VideoConfig = field(default_factory=VideoConfig)
    decodes: ToolDecodes = field(default_factory=ToolDecodes)
    limits: VideoToolLimits = field(default=None)  # type: ignore[assignment]
    # A video control (`video/controls.py`) every returned clip or image is put under, as
    # the prompt's video is (evaluation's controls with tools); `control_key` seeds it.
    control: str | None = None
    control_key: str = ""

    def __post_init__(self) -> None:
        if self.limits is None:
            self.limits = VideoToolLimits(max_frames=self.config.tool_max_frames)


ToolFn = Callable[..., "ToolResult | str"]


@dataclass(frozen=True)
class ToolSpec(Checked):
    """A registered tool: its name, description, JSON-schema `parameters` (an object
    schema), time limit in seconds and function."""

    name: str
    description: str
    parameters: dict[str, Any]
    fn: ToolFn
    timeout_s: Annotated[float, Gt(0)] = 10.0

    def schema(self) -> dict[str, Any]:
        """The OpenAI/Qwen function description (`{"type": "function", "function": ...}`)
        that chat templates render into the system turn."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


TOOLS: dict[str, ToolSpec] = {}


def register_tool(
    name: str | None = None,
    *,
    description: str,
    parameters: dict[str, Any],
    timeout_s: float = 10.0,
    replace: bool = False,
) -> Callable[[ToolFn], ToolFn]:
    """Register `fn(ctx, **arguments)` as tool `name` (default: the function's name).

    `parameters` is a JSON schema of type object; an unsupported schema, a non-positive
    time limit or a name already taken (unless `replace`) is a `ConfigError` at import."""

    def add(fn: ToolFn) -> ToolFn:
        key = name or fn.__name__
        if not key.isidentifier():
            raise ConfigError(f"tool name {key!r} must be an identifier")
        if key in TOOLS and not replace:
            raise ConfigError(f"tool {key!r} is already registered; pass replace=True")
        try:
            check_schema(parameters, f"tool {key} parameters")
            json.dumps(parameters)
        except (ValueError, TypeError) as err:
            raise ConfigError(str(err)) from err
        if parameters.get("type") != "object":
            raise ConfigError(f"tool {key} parameters must be a schema of type object")
        try:
            TOOLS[key] = ToolSpec(key, description, dict(parameters), fn, float(timeout_s))
        except ConfigError as err:  # `timeout_s=0.0 must be > 0`
            raise ConfigError(f"tool {key} {err}") from None
        return fn

    return add
