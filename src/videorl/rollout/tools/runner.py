"""Running tool calls: validate, run under a time limit, and turn every failure into an
error message for the model (never an exception in the rollout).

Each call runs on a worker thread and is waited for at most its tool's `timeout_s`; a call
that overruns is reported as timed out and its thread is left to finish in the background
(Python cannot stop a thread), so tools should bound their own work (the video tools bound
frames and pixels). `run_all` runs the calls of one model turn concurrently (ParaVT's
parallel `crop_video` calls, docs/tools.md#parallel-tool-calls): every call is submitted
before any is waited for, each is waited for until its own deadline (`timeout_s` after it
began running; a call queued behind a full pool waits at most one more `timeout_s` to
begin), and the outcomes come back in call order, a failed or timed-out call as its error
and the others unaffected.
"""

from __future__ import annotations

import concurrent.futures
import importlib
import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from videorl.errors import ConfigError
from videorl.rollout.tools.parsing import ToolCall
from videorl.rollout.tools.registry import TOOLS, ToolContext, ToolError, ToolResult, ToolSpec
from videorl.rollout.tools.schema import validate, with_defaults
from videorl.video.controls import TEMPORAL, applies, apply_control
from videorl.video.decode import DecodedVideo

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ToolOutcome:
    """One call's result: the text and media for the tool turn; `error` set when it failed
    (then `text` is the error message shown to the model)."""

    call: ToolCall
    text: str
    media: tuple[DecodedVideo, ...] = ()
    error: str | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def name(self) -> str:
        return self.call.name or "?"


class ToolRunner:
    """Runs calls to the tools `specs` (the run's `rollout.tools`)."""

    def __init__(self, specs: Sequence[ToolSpec], workers: int = 4) -> None:
        self.specs = {spec.name: spec for spec in specs}
        self.workers = workers  # calls running at once; further calls of run_all queue
        self._pool = concurrent.futures.ThreadPoolExecutor(workers, "videorl-tool")

    def schemas(self) -> list[dict]:
        return [spec.schema() for spec in self.specs.values()]

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def run(self, call: ToolCall, ctx: ToolContext) -> ToolOutcome:
        """The outcome of `call`; an unknown tool, bad arguments, a `ToolError`, any other
        exception and a timeout are all errors with a message, never raised."""
        return self.run_all([call], ctx)[0]

    def run_all(self, calls: Sequence[ToolCall], ctx: ToolContext) -> list[ToolOutcome]:
        """The outcomes of `calls` in call order, the calls running concurrently on the
        pool; each failure or timeout is that call's error message (`run`), never raised."""
        started = [_Started() for _ in calls]
        pending = [self._submit(c, ctx, s) for c, s in zip(calls, started, strict=True)]
        return [
            self._wait(call, ctx, item, start) if isinstance(item, _Pending) else item
            for call, item, start in zip(calls, pending, started, strict=True)
        ]

    def _submit(self, call: ToolCall, ctx: ToolContext, start: _Started) -> ToolOutcome | _Pending:
        """The call's error outcome when it cannot run, else its future on the pool."""
        if call.error is not None:
            return _failed(call, call.error, start)
        spec = self.specs.get(call.name or "")
        if spec is None:
            return _failed(
                call, f"unknown tool {call.name!r}; available: {', '.join(self.specs)}", start
            )
        if problem := validate(call.arguments, spec.parameters):
            return _failed(call, f"{spec.name}: {problem}", start)
        arguments = with_defaults(call.arguments, spec.parameters)
        future = self._pool.submit(_call, start, spec.fn, ctx, arguments)
        return _Pending(spec, arguments, future)

    def _wait(
        self, call: ToolCall, ctx: ToolContext, pending: _Pending, start: _Started
    ) -> ToolOutcome:
        spec, arguments, future = pending.spec, pending.arguments, pending.future
        try:
            if not start.began.wait(spec.timeout_s):  # still queued behind a full pool
                raise concurrent.futures.TimeoutError
            left = start.at + spec.timeout_s - time.perf_counter()
            result = future.result(timeout=max(left, 0.0))
        except concurrent.futures.TimeoutError:
            future.cancel()
            message = f"{spec.name} took longer than its limit of {spec.timeout_s:g} s"
            return _failed(call, message, start)
        except ToolError as err:
            return _failed(call, f"{spec.name}: {err}", start)
        except Exception as err:  # noqa: BLE001 - a tool bug is an error message, logged
            log.warning("tool %s failed on %s: %r", spec.name, call.arguments, err)
            return _failed(call, f"{spec.name} failed ({type(err).__name__}: {err})", start)
        if isinstance(result, str):
            result = ToolResult(text=result)
        if ctx.control is not None and not result.under_control:
            if still := still_under_control(result.media, ctx.control):
                return _failed(call, f"{spec.name} {still}", start)
            key = f"{ctx.control_key}:{call.name}:{sorted(arguments.items())}"
            media = tuple(apply_control(m, ctx.control, key) for m in result.media)
            result = ToolResult(result.text, media)
        seconds = time.perf_counter() - start.at
        return ToolOutcome(call, result.text, tuple(result.media), seconds=seconds)


@dataclass
class _Started:
    """When a call began running (set by its worker; submission time until then)."""

    at: float = field(default_factory=time.perf_counter)
    began: threading.Event = field(default_factory=threading.Event)


@dataclass(frozen=True)
class _Pending:
    spec: ToolSpec
    arguments: dict[str, Any]
    future: concurrent.futures.Future


def _call(start: _Started, fn: Callable[..., Any], ctx: ToolContext, arguments: dict) -> Any:
    start.at = time.perf_counter()
    start.began.set()
    return fn(ctx, **arguments)


def _failed(call: ToolCall, message: str, start: _Started) -> ToolOutcome:
    seconds = time.perf_counter() - start.at
    return ToolOutcome(call, f"Error: {message}", error=message, seconds=seconds)


def still_under_control(media: Sequence[DecodedVideo], control: str) -> str:
    """Why `media` cannot be shown under `control` ("" when it can): a temporal control
    leaves a still image as it is, so an image would show the real frame at the asked time."""
    if control in TEMPORAL and any(not applies(control, m) for m in media):
        return (
            f"returns a still image, which the {control} video control cannot change; "
            "the tool is unavailable under it"
        )
    return ""


def resolve_tools(
    names: Iterable[str],
    modules: Iterable[str] = (),
    key: str = "rollout.tools",
    modules_key: str = "rollout.tool_modules",
) -> list[ToolSpec]:
    """The registered tools `names`, in order, after importing `modules` (a run's
    `rollout.tool_modules`, whose `@register_tool` calls add their tools). An unknown name
    or a module that does not import is a one-line `ConfigError` naming the `key` the names
    (or the `modules_key` the modules) came from."""
    for module in modules:
        import_tool_module(module, modules_key)
    names = list(names)
    unknown = [n for n in names if n not in TOOLS]
    if unknown:
        raise ConfigError(
            f"{key} names unknown tools {unknown}; choose from {sorted(TOOLS)} (register your "
            "own with @videorl.rollout.tools.register_tool and list its module in "
            f"{modules_key})"
        )
    return [TOOLS[n] for n in names]


def import_tool_module(module: str, key: str) -> None:
    """Import `module` (so that its `@register_tool` calls run); one that is not found or
    fails while importing is a one-line `ConfigError` naming `key`."""
    try:
        importlib.import_module(module)
    except ConfigError:
        raise  # a bad @register_tool: its own one-line message
    except Exception as err:  # noqa: BLE001 - any failure at import is the module's
        name = err.name if isinstance(err, ModuleNotFoundError) else None
        if name is not None and (module == name or module.startswith(f"{name}.")):
            raise ConfigError(
                f"{key}: cannot import {module!r} ({err}); put it on PYTHONPATH"
            ) from None
        raise ConfigError(
            f"{key}: importing {module!r} failed ({type(err).__name__}: {err})"
        ) from None
