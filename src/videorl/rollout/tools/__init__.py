"""Tools a multi-turn rollout can call (docs/tools.md): the registry, the built-in video
tools (`get_clip`, `get_frame`, `crop`), Qwen tool-call parsing and the runner."""

from videorl.rollout.tools.parsing import ToolCall, parse_tool_calls
from videorl.rollout.tools.registry import (
    TOOLS,
    ToolContext,
    ToolDecodes,
    ToolError,
    ToolResult,
    ToolSpec,
    VideoToolLimits,
    register_tool,
)
from videorl.rollout.tools.runner import ToolOutcome, ToolRunner, resolve_tools
from videorl.rollout.tools.video import crop, get_clip, get_frame  # registers them

__all__ = [
    "TOOLS",
    "ToolCall",
    "ToolContext",
    "ToolDecodes",
    "ToolError",
    "ToolOutcome",
    "ToolResult",
    "ToolRunner",
    "ToolSpec",
    "VideoToolLimits",
    "crop",
    "get_clip",
    "get_frame",
    "parse_tool_calls",
    "register_tool",
    "resolve_tools",
]
