"""Parallel tool calls in one turn (`ToolRunner.run_all`, docs/tools.md#parallel-tool-calls):
the calls run at once, land in call order, and one failing or timing-out call loses none
of the others."""

from __future__ import annotations

import threading

import pytest

from videorl.rollout.tools import TOOLS, ToolCall, ToolContext, ToolRunner, register_tool
from videorl.rollout.tools.runner import ToolOutcome

SCHEMA = {
    "type": "object",
    "properties": {"n": {"type": "integer"}},
    "required": ["n"],
    "additionalProperties": False,
}


@pytest.fixture
def scratch_tools():
    before = dict(TOOLS)
    yield
    TOOLS.clear()
    TOOLS.update(before)


def _call(name: str, n: int) -> ToolCall:
    return ToolCall("", name, {"n": n})


def test_the_calls_of_a_turn_run_at_once_and_land_in_order(scratch_tools):
    meeting = threading.Barrier(3, timeout=30)  # passes only with all three calls in flight

    @register_tool("meet", description="", parameters=SCHEMA, timeout_s=60)
    def meet(ctx, n):
        meeting.wait()
        return f"call {n}"

    runner = ToolRunner([TOOLS["meet"]])
    outcomes = runner.run_all([_call("meet", n) for n in (3, 1, 2)], ToolContext())
    runner.close()
    assert [o.text for o in outcomes] == ["call 3", "call 1", "call 2"]
    assert all(o.ok for o in outcomes)


def test_a_call_that_times_out_or_fails_loses_none_of_the_others(scratch_tools):
    release = threading.Event()
    others_done = threading.Barrier(2, timeout=30)

    @register_tool("stuck", description="", parameters=SCHEMA, timeout_s=0.2)
    def stuck(ctx, n):
        release.wait(60)  # never set before the runner gives up on it
        return "late"

    @register_tool("ok", description="", parameters=SCHEMA, timeout_s=60)
    def ok(ctx, n):
        others_done.wait()  # the two good calls overlap as well
        return f"ok {n}"

    @register_tool("boom", description="", parameters=SCHEMA, timeout_s=60)
    def boom(ctx, n):
        raise RuntimeError("tool bug")

    runner = ToolRunner([TOOLS[name] for name in ("stuck", "ok", "boom")])
    calls = [_call("ok", 1), _call("stuck", 2), _call("boom", 3), _call("ok", 4)]
    outcomes: list[ToolOutcome] = runner.run_all(calls, ToolContext())
    release.set()
    runner.close()
    assert [o.name for o in outcomes] == ["ok", "stuck", "boom", "ok"]
    assert [o.text for o in outcomes][0::3] == ["ok 1", "ok 4"]
    assert "longer than its limit of 0.2 s" in (outcomes[1].error or "")
    assert "RuntimeError: tool bug" in (outcomes[2].error or "")
    assert [o.ok for o in outcomes] == [True, False, False, True]


def test_bad_calls_are_errors_in_place(scratch_tools):
    @register_tool("echo", description="", parameters=SCHEMA)
    def echo(ctx, n):
        return str(n)

    runner = ToolRunner([TOOLS["echo"]])
    calls = [_call("echo", 1), ToolCall("", "nope", {}), ToolCall("", "echo", {"n": "x"})]
    outcomes = runner.run_all(calls, ToolContext())
    runner.close()
    assert outcomes[0].text == "1"
    assert "unknown tool 'nope'" in (outcomes[1].error or "")
    assert outcomes[2].error is not None and outcomes[2].error.startswith("echo:")
