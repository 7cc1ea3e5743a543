"""The policy's weights shared with rollout worker processes on one node (docs/async.md).

The trainer allocates `slots` copies of the policy's state dict in shared memory
(`torch.multiprocessing`: POSIX shared memory for CPU tensors, CUDA IPC handles for GPU
tensors) and passes them to the workers it spawns. After an update it copies its weights
into the slot of their version (`publish`: slot = version mod slots); a worker copies the
version its request names out into its own model (`load_into`), waiting until it is
published. With max_staleness k the versions still needed lie in a window of k + 1
consecutive versions, so k + 1 slots never overwrite one a request needs, and which weights
sample a batch depends on the step alone, not on timing: a run repeats, and resumes as it
would have gone on. The copies take a memcpy each; neither side waits for the other's
progress beyond the version it needs. Versions count optimizer steps: the weights after
step t are version t + 1 (the start of a run, or a resume at step s: s).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch


class SharedWeights:
    """`slots` shared-memory state dicts and the version each holds (-1: none yet)."""

    def __init__(self, model: torch.nn.Module, context: Any, slots: int = 1) -> None:
        state = model.state_dict()
        self.slots = [
            {name: tensor.detach().clone().share_memory_() for name, tensor in state.items()}
            for _ in range(slots)
        ]
        self._versions = context.Array("q", [-1] * slots, lock=False)
        self._changed = context.Condition()

    def _slot(self, version: int) -> int:
        return version % len(self.slots)

    def holds(self, version: int) -> bool:
        return int(self._versions[self._slot(version)]) == version

    def publish(self, model: torch.nn.Module, version: int) -> None:
        """Copy `model`'s weights in as `version` and wake the workers waiting for it."""
        self.publish_state(model.state_dict(), version)

    @torch.no_grad()
    def load_into(self, model: torch.nn.Module, version: int) -> None:
        """Copy the published `version` into `model`."""
        with self._changed:
            if not self.holds(version):
                raise RuntimeError(f"weights of version {version} are not published")
            model.load_state_dict(self.slots[self._slot(version)])

    def held(self, versions: range) -> dict[int, dict[str, torch.Tensor]]:
        """Copies of the published `versions` still in their slots (a checkpoint keeps the
        ones a resumed run's first batches are sampled by)."""
        with self._changed:
            return {
                v: {name: t.clone() for name, t in self.slots[self._slot(v)].items()}
                for v in versions
                if self.holds(v)
            }

    @torch.no_grad()
    def publish_state(self, state: dict[str, torch.Tensor], version: int) -> None:
        """Copy `state` (a model's, or a checkpoint's `held` copy) in as `version` and wake
        the workers waiting for it."""
        slot = self._slot(version)
        with self._changed:
            for name, shared in self.slots[slot].items():
                shared.copy_(state[name])
            self._versions[slot] = version
            self._changed.notify_all()

    def wait_for(self, version: int, *, timeout_s: float, alive: Callable[[], bool]) -> bool:
        """Block until `version` is published; False when `timeout_s` passed or `alive()`
        turned false (checked every second) first."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while not self.holds(version):
                left = deadline - time.monotonic()
                if left <= 0 or not alive():
                    return False
                self._changed.wait(min(1.0, left))
        return True
