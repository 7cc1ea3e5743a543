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

`sampler="orarl"` is OraRL's `TaskGroupedBatchSampler` (`verl/utils/dataset.py` lines 236-326,
used with `drop_last=True` by `verl/trainer/data_loader.py` lines 75-83): groups by the row's
`problem_type` (`task_key`: spatial-intelligence subtypes are groups of their own), sorted by
name; each epoch every group is permuted by `torch.randperm` from one generator seeded once
with `seed` (so epoch e continues the draws of the epochs before it; `shuffle=False` keeps
file order), cut into batches, the incomplete tail dropped, then taken round-robin over the
sorted groups. Resuming replays the earlier epochs' draws.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Literal, get_args

import numpy as np
import torch

from videorl.data.families import BUILTIN_FAMILIES, Family, families
from videorl.data.records import TaskRecord
from videorl.errors import ConfigError

SamplerName = Literal["videorl", "orarl"]
SAMPLERS: tuple[str, ...] = get_args(SamplerName)


def task_key(record: TaskRecord) -> str:
    """OraRL's group key (`group_by_task_key: problem_type`): the row's own `problem_type`
    (kept in `extra` by the column loaders), else the spatial-intelligence subtype, else the
    family name."""
    raw = record.extra.get("problem_type")
    if isinstance(raw, str) and raw.strip():
        return raw
    if record.family.task.subtype_groups and record.subtype:
        return record.subtype
    return record.family.value


class TaskGroupedSampler:
    """Iterates one epoch of batches (lists of record indices) from the saved position."""

    def __init__(
        self,
        records: Sequence[TaskRecord],
        batch_size: int,
        seed: int = 0,
        shuffle: bool = True,
        group_by_family: bool = True,
        sampler: str = "videorl",
    ) -> None:
        if batch_size < 1:
            raise ConfigError(f"data.batch_size={batch_size} must be at least 1")
        if not records:
            raise ConfigError("the sampler got no records; check the data files")
        if sampler not in SAMPLERS:
            raise ConfigError(f"data.sampler={sampler!r}; choose one of {', '.join(SAMPLERS)}")
        if sampler == "orarl" and not group_by_family:
            raise ConfigError(
                "data.sampler=orarl groups batches by problem_type; set data.group_by_family=true "
                "or data.sampler=videorl"
            )
        self.sampler = sampler
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
        self._families = tuple(f for f in families() if f in groups)
        self._groups: dict[Family | None, list[int]] = (
            {f: groups[f] for f in self._families}
            if group_by_family
            else {None: list(range(len(records)))}
        )
        self._tasks: dict[str, list[int]] = {}
        if sampler == "orarl":
            tasks: dict[str, list[int]] = {}
            for index, record in enumerate(records):
                tasks.setdefault(task_key(record), []).append(index)
            self._tasks = {name: tasks[name] for name in sorted(tasks)}
            if len(self) == 0:
                sizes = ", ".join(f"{name} ({len(ix)})" for name, ix in self._tasks.items())
                raise ConfigError(
                    f"data.sampler=orarl drops incomplete batches, and no problem_type has "
                    f"{batch_size} records (data.prompts_per_step): {sizes}"
                )

    @property
    def families(self) -> tuple[Family, ...]:
        return self._families

    @property
    def tasks(self) -> dict[str, int]:
        """`sampler="orarl"`: the records of each problem_type group, in batch order."""
        return {name: len(indices) for name, indices in self._tasks.items()}

    def epoch_batches(self, epoch: int) -> list[list[int]]:
        """All batches of `epoch`, in order."""
        if self.sampler == "orarl":
            return self._orarl_epoch_batches(epoch)
        per_family: list[list[list[int]]] = []
        streams = families()
        for family, indices in self._groups.items():
            stream = len(BUILTIN_FAMILIES) if family is None else streams.index(family)
            rng = np.random.default_rng([self.seed, epoch, stream])
            permutation = rng.permutation(len(indices)) if self.shuffle else range(len(indices))
            order = [indices[i] for i in permutation]
            count = -(-len(order) // self.batch_size)  # ceil
            cycled = [order[i % len(order)] for i in range(count * self.batch_size)]
            per_family.append(
                [cycled[b * self.batch_size : (b + 1) * self.batch_size] for b in range(count)]
            )
        batches: list[list[int]] = []
        for round_ in range(max(len(b) for b in per_family)):
            batches.extend(b[round_] for b in per_family if round_ < len(b))
        return batches

    def _orarl_epoch_batches(self, epoch: int) -> list[list[int]]:
        """OraRL's batches of `epoch` (module docstring): the generator's draws of epochs
        0..epoch-1 are replayed so that a resumed run continues the same sequence."""
        generator = torch.Generator()
        generator.manual_seed(self.seed)
        per_task: list[list[list[int]]] = []
        for _ in range(epoch + 1):
            per_task = []
            for indices in self._tasks.values():
                order = indices
                if self.shuffle:
                    permutation = torch.randperm(len(indices), generator=generator).tolist()
                    order = [indices[i] for i in permutation]
                full = len(order) // self.batch_size  # drop_last: the short tail is dropped
                size = self.batch_size
                per_task.append([order[b * size : (b + 1) * size] for b in range(full)])
        batches: list[list[int]] = []
        for round_ in range(max(len(b) for b in per_task)):
            batches.extend(b[round_] for b in per_task if round_ < len(b))
        return batches

    def __len__(self) -> int:
        """Batches per epoch."""
        if self.sampler == "orarl":
            return sum(len(ix) // self.batch_size for ix in self._tasks.values())
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

    def peek_batch(self) -> list[int]:
        """The batch `next_batch` would return now, without moving (prefetch reads it)."""
        epoch, position = self.epoch, self.position
        try:
            return self.next_batch()
        finally:
            self.epoch, self.position = epoch, position

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
        if self.sampler != "videorl":  # absent (as in older checkpoints): videorl's
            state["sampler"] = self.sampler
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume at `state`; refuses a state made with another seed, batch size or
        grouping, since the saved position would then point into a different order."""
        state = {"group_by_family": True, "sampler": "videorl", **state}
        for key in ("seed", "batch_size", "group_by_family", "sampler"):
            if key in state and state[key] != getattr(self, key):
                raise ConfigError(
                    f"sampler checkpoint has {key}={state[key]} but this run uses "
                    f"{key}={getattr(self, key)}; resume with the same value"
                )
        self.epoch = int(state["epoch"])
        self.position = int(state["position"])
