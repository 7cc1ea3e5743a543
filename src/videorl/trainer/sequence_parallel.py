"""Sequence parallelism in the trainer (`model.sequence_parallel_size`, docs/sequence_parallel.md).

The ranks of one sequence-parallel group hold the same rows: they are given the same prompts
(`distributed.shard_indices`), the group's first rank generates and the others receive its
generations (`GroupEngine`: the batches are then the same without relying on identical
sampling on every rank), and every forward that scores rows (the rewards' log-prob passes,
the teacher's, the old and reference log-probs and the update) runs inside `split_forwards`,
which splits each model's text model over the group (`models/sequence_parallel.py`) and its
vision tower by frames (`models/split_vision.py`), the visual-embedding caches included.

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
from videorl.models.split_vision import vision_split_refusal, vision_tower
from videorl.models.visual_cache import VisualEmbeddingCache
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


def vision_split_note(size: int, policy: torch.nn.Module) -> str | None:
    """A note when sequence parallelism cannot split `policy`'s vision tower by frames (its
    ranks then each encode every video; `models/split_vision.py`); None when it can, or
    with no sequence parallelism or no tower."""
    if size == 1 or vision_tower(policy) is None:
        return None
    reason = vision_split_refusal(policy)
    return None if reason is None else f"model.sequence_parallel_size={size}: {reason}"


class GroupEngine:
    """A rollout engine whose generations come from the first rank of the sequence-parallel
    `group`: that rank runs `engine`, the others receive its generations and its torch
    random state after sampling, so that what the step draws next (TaRO's constructed
    rows, T-GRPO's shuffles) is drawn alike on every rank of the group. The prompts'
    videos are first encoded into the rollout's visual-embedding cache by the whole group
    (each rank a share of the frames), so that the first rank's generation and every rank's
    later forwards read the same stored embeddings: each video is encoded once per step
    across the group."""

    def __init__(self, engine: RolloutEngine, group: dist.ProcessGroup) -> None:
        self.engine = engine
        self.group = group
        self.loaded = engine.loaded

    def _from_first_rank(self, prompts: Sequence[PromptEncoding], generate: Callable[[], T]) -> T:
        cache = getattr(self.loaded, "visual_cache", None)
        if cache is not None:  # every rank encodes its share; the first rank's generation reads
            with torch.no_grad(), cache.split_over(self.group):
                cache.encoder_outputs(prompts)
        first = dist.get_rank(self.group) == 0
        box: list[Any] = [(generate(), _rng_states()) if first else None]
        dist.broadcast_object_list(box, group=self.group, group_src=0)
        generations, states = box[0]
        _set_rng_states(states)  # sampling drew on the first rank only
        return generations

    def generate(
        self, prompts: Sequence[PromptEncoding], params: SamplingParams
    ) -> list[Generation]:
        return self._from_first_rank(prompts, lambda: self.engine.generate(prompts, params))

    def continue_prefixes(
        self,
        prompts: Sequence[PromptEncoding],
        prefixes: Sequence[torch.Tensor],
        params: SamplingParams,
    ) -> list[Generation]:
        return self._from_first_rank(
            prompts, lambda: self.engine.continue_prefixes(prompts, prefixes, params)
        )

    def sync_weights(self, policy: torch.nn.Module) -> None:
        self.engine.sync_weights(policy)  # every rank: gathering FSDP weights is collective

    def sleep(self) -> None:
        self.engine.sleep()


def _rng_states() -> dict[str, torch.Tensor]:
    """torch's CPU (and current CUDA device's) random state."""
    states = {"cpu": torch.get_rng_state()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        states["cuda"] = torch.cuda.get_rng_state()
    return states


def _set_rng_states(states: dict[str, torch.Tensor]) -> None:
    torch.set_rng_state(states["cpu"])
    if "cuda" in states and torch.cuda.is_available():
        torch.cuda.set_rng_state(states["cuda"])


@contextlib.contextmanager
def split_forwards(group: dist.ProcessGroup | None, *models: LoadedModel | None) -> Iterator[None]:
    """Within the block the forwards of `models` (None skipped, each model once) run their
    text model split over `group` and their vision towers on each rank's share of the
    frames, and the models' visual-embedding caches encode what they miss once across the
    group; no group: nothing changes. Generation stays outside: it needs a KV cache, which a
    split forward does not keep (`GroupEngine` fills the cache across the group first)."""
    with contextlib.ExitStack() as stack:
        if group is not None:
            seen: set[int] = set()
            for loaded in models:
                if loaded is not None and id(loaded.model) not in seen:
                    seen.add(id(loaded.model))
                    stack.enter_context(sequence_parallel(loaded.model, group))
            for cache in _caches(models):
                stack.enter_context(cache.split_over(group))
        yield


def _caches(models: Sequence[LoadedModel | None]) -> list[VisualEmbeddingCache]:
    """The models' visual-embedding caches, each once (the policy's is its rollout copy's)."""
    caches = {id(c): c for m in models if (c := getattr(m, "visual_cache", None)) is not None}
    return list(caches.values())
