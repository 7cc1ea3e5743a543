"""Ctrl-C during training: the saved state is exactly "after step k", never half a step.

The first SIGINT only sets a flag; the loop finishes the step in flight (rollout, update,
validation, metrics, periodic save), all ranks agree on the flag between steps (max over
ranks), and the run saves and stops. A second Ctrl-C, at least `grace_s` after the first,
raises `KeyboardInterrupt` at once; the loop then discards the step in flight: when the
optimizer has not stepped yet, `StepGuard.rollback` puts the step counter, sampler,
scheduler and RNG back to the step's start, so the checkpoint equals the one an
uninterrupted run writes after step k; otherwise nothing is saved and the last checkpoint
stands. Deliveries within `grace_s` of the first count as one: a launcher that leaves its
workers in the terminal's process group delivers a Ctrl-C twice (directly, and forwarded).
torchrun starts each worker in a session of its own, so there the agent's forwarded SIGINT
is the only one (and a SIGKILL to the launcher's group does not reach the workers).
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

from videorl.distributed import all_reduce
from videorl.trainer.rng import rng_state, set_rng_state

if TYPE_CHECKING:
    from videorl.trainer.state import TrainState


class StopRequest:
    """Turns the first SIGINT into a request to stop after the current step."""

    def __init__(self, grace_s: float = 2.0) -> None:
        self.grace_s = grace_s
        self.first: float | None = None
        self._previous: Any = None

    @property
    def requested(self) -> bool:
        return self.first is not None

    def handle(self, _signum: int, _frame: Any) -> None:
        now = time.monotonic()
        if self.first is None:
            self.first = now
            sys.stderr.write(
                "\ninterrupt: finishing the current step, then saving (Ctrl-C again to stop now)\n"
            )
            return
        if now - self.first >= self.grace_s:
            raise KeyboardInterrupt

    def agreed(self) -> bool:
        """Whether any rank was asked to stop (every rank gets the same answer)."""
        return all_reduce(float(self.requested), "max") > 0

    def install(self) -> None:
        """Handle SIGINT from now on (main thread only; elsewhere a no-op)."""
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self.handle)

    def uninstall(self) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None


class StepGuard:
    """Remembers what a step changes cheaply (step, sampler, scheduler, best, RNG) and
    whether the optimizer has stepped since `begin`, so an interrupted step can be undone."""

    def __init__(self, state: TrainState) -> None:
        self.state = state
        self.start: dict[str, Any] | None = None
        self.stepped = False
        self._hook = state.optimizer.register_step_pre_hook(self._mark)

    def _mark(self, *_args: Any) -> None:
        self.stepped = True

    @property
    def in_flight(self) -> bool:
        return self.start is not None

    def begin(self) -> None:
        s = self.state
        self.stepped = False
        self.start = {
            "step": s.step,
            "sampler": s.sampler_state(),
            "scheduler": s.scheduler.state_dict(),
            "best": s.best,
            "lr": [group["lr"] for group in s.optimizer.param_groups],
            "rng": rng_state(),
        }

    def end(self) -> None:
        self.start = None

    def rollback(self) -> bool:
        """Undo the step in flight; False when it cannot be undone (the weights moved)."""
        if self.start is None:
            return True
        if self.stepped:
            return False
        s, start = self.state, self.start
        s.step, s.best = start["step"], start["best"]
        s.sampler.load_state_dict(start["sampler"])
        s.scheduler.load_state_dict(start["scheduler"])
        for group, lr in zip(s.optimizer.param_groups, start["lr"], strict=True):
            group["lr"] = lr
        set_rng_state(start["rng"])
        self.start = None
        return True

    def close(self) -> None:
        self._hook.remove()
