"""Task-grouped batches: each batch from one family, families in rotation (resumable).
With `group_by_family=False` all records form one pool, so a batch mixes families.

Epoch e: each family's record indices are shuffled by `rng(seed, e, family)` (kept in file
order with `shuffle=False`) and cut into
batches of `batch_size`; a family's last, short batch is topped up from the start of the
same shuffled order (wrapping around), so every batch has exactly `batch_size` indices and
a family smaller than a batch is still trained on. Batches are then taken round-robin over
the families in canonical order, skipping a family once its batches are used up. The
order depends only on (records' families, batch_size, seed, epoch), so
`load_state_dict(state_dict())` resumes at the same batch.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from videorl.data.families import Family
from videorl.data.records import TaskRecord
from videorl.errors import ConfigError

_FAMILY_ORDER = tuple(Family)


class TaskGroupedSampler:
    """Iterates one epoch of batches (lists of record indices) from the saved position."""

    def __init__(
        self,
        records: Sequence[TaskRecord],
        batch_size: int,
        seed: int = 0,
        shuffle: bool = True,
        group_by_family: bool = True,
    ) -> None:
        if batch_size < 1:
            raise ConfigError(f"data.batch_size={batch_size} must be at least 1")
        if not records:
            raise ConfigError("the sampler got no records; check the data files")
        self.batch_size = batch_size
        self.seed = seed
        self.shuffle = shuffle  # False: each family in file order (OPDVR's data.shuffle=False)
        # False: one pool of all records, so a batch mixes families (images and videos alike)
        self.group_by_family = group_by_family
        self.epoch = 0
        self.position = 0  # batches of the current epoch already handed out
        self._cached: tuple[int, list[list[int]]] | None = None  # (epoch, its batches)
        groups: dict[Family, list[int]] = {}
        for index, record in enumerate(records):
            groups.setdefault(record.family, []).append(index)
        self._families = tuple(f for f in _FAMILY_ORDER if f in groups)
        self._groups: dict[Family | None, list[int]] = (
            {f: groups[f] for f in self._families}
            if group_by_family
            else {None: list(range(len(records)))}
        )

    @property
    def families(self) -> tuple[Family, ...]:
        return self._families

    def epoch_batches(self, epoch: int) -> list[list[int]]:
        """All batches of `epoch`, in order."""
        per_family: list[list[list[int]]] = []
        for family, indices in self._groups.items():
            stream = len(_FAMILY_ORDER) if family is None else _FAMILY_ORDER.index(family)
            rng = np.random.default_rng([self.seed, epoch, stream])
            permutation = rng.permutation(len(indices)) if self.shuffle else range(len(indices))
            order = [indices[i] for i in permutation]
            count = -(-len(order) // self.batch_size)  # ceil
            cycled = [order[i % len(order)] for i in range(count * self.batch_size)]
            per_family.append(
                [cycled[b * self.batch_size : (b + 1) * self.batch_size] for b in range(count)]
            )
        batches = []
        for round_ in range(max(len(b) for b in per_family)):
            batches.extend(b[round_] for b in per_family if round_ < len(b))
        return batches

    def __len__(self) -> int:
        """Batches per epoch."""
        return sum(-(-len(ix) // self.batch_size) for ix in self._groups.values())

    def __iter__(self) -> Iterator[list[int]]:
        """The rest of the current epoch; afterwards `epoch` has advanced by one."""
        batches = self.epoch_batches(self.epoch)
        while self.position < len(batches):
            batch = batches[self.position]
            self.position += 1  # counted before yielding: a checkpoint taken now resumes after it
            yield batch
        self.epoch += 1
        self.position = 0

    def next_batch(self) -> list[int]:
        """The batch after the saved position, moving into the next epoch after the last
        one: the same sequence as iterating epoch after epoch. The training loop and
        dynamic sampling's refills both draw through this (a live `__iter__` generator
        keeps its own epoch's list, so do not mix the two)."""
        if self._cached is None or self._cached[0] != self.epoch:
            self._cached = (self.epoch, self.epoch_batches(self.epoch))
        batches = self._cached[1]
        if self.position >= len(batches):  # the epoch is used up: as `__iter__` ending
            self.epoch, self.position = self.epoch + 1, 0
            return self.next_batch()
        self.position += 1  # counted before returning: a checkpoint taken now resumes after it
        return batches[self.position - 1]

    def set_epoch(self, epoch: int) -> None:
        self.epoch, self.position = epoch, 0

    def state_dict(self) -> dict[str, Any]:
        state: dict[str, Any] = {
            "epoch": self.epoch,
            "position": self.position,
            "seed": self.seed,
            "batch_size": self.batch_size,
        }
        if not self.group_by_family:  # absent (as in older checkpoints): grouped
            state["group_by_family"] = False
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume at `state`; refuses a state made with another seed, batch size or
        grouping, since the saved position would then point into a different order."""
        state = {"group_by_family": True, **state}
        for key in ("seed", "batch_size", "group_by_family"):
            if key in state and state[key] != getattr(self, key):
                raise ConfigError(
                    f"sampler checkpoint has {key}={state[key]} but this run uses "
                    f"{key}={getattr(self, key)}; resume with the same value"
                )
        self.epoch = int(state["epoch"])
        self.position = int(state["position"])
