"""Sequence parallelism in the trainer (`model.sequence_parallel_size`, docs/sequence_parallel.md).

The ranks of one sequence-parallel group hold the same rows: they are given the same prompts
(`distributed.shard_indices`), the group's first rank generates and the others receive its
generations (`GroupEngine`: the batches are then the same without relying on identical
sampling on every rank), and every forward that scores rows (the rewards' log-prob passes,
the teacher's, the old and reference log-probs and the update) runs inside `split_forwards`,
which splits each model's text model over the group (`models/sequence_parallel.py`).

The update's gradient: FSDP shards over the whole world and averages gradients over its W
ranks. A group's S ranks compute the same loss L_g (normalised by the step's token count,
each group's tokens counted once), and the mean of their gradients is the gradient of L_g
(`models/sequence_parallel.py`), so the FSDP mean is (1 / W) * S * sum_g grad L_g. Scaling
each rank's loss by W / S (the data-parallel size) gives sum_g grad L_g, the gradient of
the step's loss over all groups, as one process computes it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import torch
import torch.distributed as dist

from videorl.errors import ConfigError
from videorl.models.generate import Generation, SamplingParams
from videorl.models.inputs import PromptEncoding
from videorl.models.loading import LoadedModel
from videorl.models.sequence_parallel import check_splittable, sequence_parallel
from videorl.rollout.engine import RolloutEngine

T = TypeVar("T")


def check_sequence_parallel(size: int, policy: torch.nn.Module) -> None:
    """A one-line `ConfigError` when `policy`'s text model cannot be split over `size` ranks
    (heads that do not divide, linear attention: `check_splittable`)."""
    if size == 1:
        return
    try:
        check_splittable(policy, size)
    except ValueError as err:
        raise ConfigError(str(err)) from None


class GroupEngine:
    """A rollout engine whose generations come from the first rank of the sequence-parallel
    `group`: that rank runs `engine`, the others receive its generations."""

    def __init__(self, engine: RolloutEngine, group: dist.ProcessGroup) -> None:
        self.engine = engine
        self.group = group
        self.loaded = engine.loaded

    def _from_first_rank(self, generate: Callable[[], T]) -> T:
        box: list[Any] = [generate() if dist.get_rank(self.group) == 0 else None]
        dist.broadcast_object_list(box, group=self.group, group_src=0)
        return box[0]

    def generate(
        self, prompts: Sequence[PromptEncoding], params: SamplingParams
    ) -> list[Generation]:
        return self._from_first_rank(lambda: self.engine.generate(prompts, params))

    def continue_prefixes(
        self,
        prompts: Sequence[PromptEncoding],
        prefixes: Sequence[torch.Tensor],
        params: SamplingParams,
    ) -> list[Generation]:
        return self._from_first_rank(
            lambda: self.engine.continue_prefixes(prompts, prefixes, params)
        )

    def sync_weights(self, policy: torch.nn.Module) -> None:
        self.engine.sync_weights(policy)  # every rank: gathering FSDP weights is collective

    def sleep(self) -> None:
        self.engine.sleep()


@contextlib.contextmanager
def split_forwards(group: dist.ProcessGroup | None, *models: LoadedModel | None) -> Iterator[None]:
    """Within the block the forwards of `models` (None skipped, each model once) run their
    text model split over `group`; no group: nothing changes. Generation stays outside: it
    needs a KV cache, which a split forward does not keep."""
    with contextlib.ExitStack() as stack:
        if group is not None:
            seen: set[int] = set()
            for loaded in models:
                if loaded is not None and id(loaded.model) not in seen:
                    seen.add(id(loaded.model))
                    stack.enter_context(sequence_parallel(loaded.model, group))
        yield
