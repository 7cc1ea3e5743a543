"""Resume equals an uninterrupted run: same batches, learning rates, weights, optimizer,
scheduler, sampler and RNG state, after a plain resume and after Ctrl-C at several points
of a step (the step in flight is finished, or discarded when it cannot be finished)."""

from __future__ import annotations

import functools
import os
import shutil
import signal
from dataclasses import replace

import pytest

from tests.trainer.runs import assert_same_checkpoint, metrics_by_step, with_output
from videorl.trainer import loop
from videorl.trainer.checkpoint import Checkpointer
from videorl.trainer.interrupt import StopRequest
from videorl.trainer.loop import LoopHooks, run_training
from videorl.trainer.step import STAGES, train_step
from videorl.trainer.validation import validate

pytestmark = pytest.mark.slow  # multi-process or whole-run: `make test`, not `make test-fast`


def _assert_resumed_run_equals_reference(out, reference_out, first_step: int) -> None:
    got, expected = metrics_by_step(out), metrics_by_step(reference_out)
    assert sorted(expected) == [1, 2, 3, 4]
    assert [s for s in sorted(got) if s >= first_step] == list(range(first_step, 5))
    for step in range(first_step, 5):
        assert got[step]["batch_ids"] == expected[step]["batch_ids"], f"step {step} batch"
        assert got[step]["lr"] == expected[step]["lr"], f"step {step} lr"
        assert got[step]["actor/loss"] == expected[step]["actor/loss"], f"step {step} loss"
    assert_same_checkpoint(out / "step-000004", reference_out / "step-000004")


def test_resume_from_a_checkpoint_equals_the_uninterrupted_run(reference_run, tmp_path):
    config, reference_out = reference_run
    out = tmp_path / "run"
    out.mkdir()
    shutil.copytree(reference_out / "step-000002", out / "step-000002")
    run_training(with_output(config, out), resume="auto")
    _assert_resumed_run_equals_reference(out, reference_out, first_step=3)


def _sigint(times: int = 1) -> None:
    for _ in range(times):
        os.kill(os.getpid(), signal.SIGINT)


def _interrupting(real, *, call: int, times: int = 1, after: bool = False):
    """`real` wrapped to send SIGINT (`times` in a row) to this process at its `call`-th
    call, before `real` runs (or right after it with `after`); and its call counter."""
    calls = {"n": 0}

    def wrapped(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == call and not after:
            _sigint(times)
        result = real(*args, **kwargs)
        if calls["n"] == call and after:
            _sigint(times)
        return result

    return wrapped, calls


def _interrupt_at(monkeypatch, name: str, *, owner, **when):
    """`_interrupting` in place of `<owner>.<name>`, a function of the loop that no hook
    reaches (`Checkpointer.save`)."""
    wrapped, calls = _interrupting(getattr(owner, name), **when)
    monkeypatch.setattr(owner, name, wrapped)
    return calls


def _steps(out) -> list[int]:
    from videorl.trainer.checkpoint import list_checkpoints

    return [int(p.name.split("-")[1]) for p in list_checkpoints(out)]


def test_ctrl_c_at_five_points_then_resume_equals_the_uninterrupted_run(
    reference_run, tmp_path, monkeypatch
):
    """One run interrupted five times, resumed after each: during step 1's rollout (the
    step finishes, then it saves), during step 2's periodic save (that clean checkpoint is
    kept, not rewritten), twice-Ctrl-C after step 3's optimizer step (step discarded, nothing
    saved), twice-Ctrl-C before step 3's optimizer step (rolled back: the sampler does not
    skip its batch), during step 4's validation (the run still completes). After each stop
    the newest checkpoint equals the reference's checkpoint of that step, bit for bit."""
    config, reference_out = reference_run
    out = tmp_path / "run"
    config = with_output(config, out)
    monkeypatch.setattr(loop, "StopRequest", functools.partial(StopRequest, grace_s=0.0))

    def resume(name, *, call, times=1, after=False, first=False, owner=loop):
        """Run until the interruption at `name`: the step's draw and update are interrupted
        through its stages, the validation through the loop's hooks, the loop's own points
        by patching their `owner`."""
        when = {"call": call, "times": times, "after": after}
        with monkeypatch.context() as m:
            if name in ("draw", "update"):
                stage, calls = _interrupting(getattr(STAGES, name), **when)
                step = functools.partial(train_step, stages=replace(STAGES, **{name: stage}))
                hooks = LoopHooks(step=step)
            elif name == "validate":
                checked, calls = _interrupting(validate, **when)
                hooks = LoopHooks(validate=checked)
            else:
                calls, hooks = _interrupt_at(m, name, owner=owner, **when), LoopHooks()
            path = run_training(config, resume=None if first else "auto", hooks=hooks)
        assert calls["n"] >= call, f"{name} was not reached"
        return path

    path = resume("draw", call=1, first=True)
    assert path == out / "step-000001" and _steps(out) == [1]
    assert_same_checkpoint(path, reference_out / "step-000001")

    saves = {"n": 0}
    real_save = Checkpointer.save

    def counting_save(self, state):
        saves["n"] += 1
        return real_save(self, state)

    monkeypatch.setattr(Checkpointer, "save", counting_save)
    path = resume("save", call=1, owner=Checkpointer)  # resumed at step 1: step 2 saves first
    assert path == out / "step-000002" and _steps(out) == [1, 2]
    assert saves["n"] == 1, "the Ctrl-C on a save step wrote the checkpoint again"
    assert_same_checkpoint(path, reference_out / "step-000002")

    path = resume("update", call=1, times=2, after=True)
    assert path == out / "step-000002" and _steps(out) == [1, 2], "a moved step was saved"
    assert_same_checkpoint(path, reference_out / "step-000002")

    path = resume("update", call=1, times=2)
    assert path == out / "step-000002" and _steps(out) == [1, 2]
    assert_same_checkpoint(path, reference_out / "step-000002")

    final = resume("validate", call=1)  # step 4's validation (steps 3 and 4 run)
    assert final == out / "final"
    _assert_resumed_run_equals_reference(out, reference_out, first_step=1)
    for step in (3, 4):
        assert_same_checkpoint(out / f"step-{step:06d}", reference_out / f"step-{step:06d}")
    assert (out / "final" / "model.safetensors").read_bytes() == (
        reference_out / "final" / "model.safetensors"
    ).read_bytes()
