"""Data parallelism on the standard engine: torchrun + torch.distributed + FSDP2.

NCCL on GPUs, gloo on CPU. `apply_fsdp` shards each decoder layer and then the root with
`fully_shard` (composable, like torchtitan's `apply_fsdp`). Collectives must stay matched
across ranks, so helpers here make every rank agree on counts and decisions.

With sequence parallelism (`model.sequence_parallel_size` S, docs/sequence_parallel.md) the
W ranks form W / S data-parallel groups of S consecutive ranks; the ranks of one group hold
the same rows and split each row's sequence (`models/sequence_parallel.py`). Prompts are
shared out over the groups, not the ranks, and metrics count each group once.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Any, Literal, cast

import torch
import torch.distributed as dist

from videorl.reduction import Metric, combine, logged


@dataclass(frozen=True)
class DistInfo:
    """Where this process sits: rank, world size and device."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: str = "cpu"
    sequence_parallel: int = 1  # ranks per sequence-parallel group (consecutive ranks)
    # this rank's sequence-parallel group (None: no sequence parallelism)
    sequence_group: dist.ProcessGroup | None = field(default=None, compare=False, repr=False)

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def data_parallel_size(self) -> int:
        """How many groups hold different rows: the world size over the sequence-parallel size."""
        return self.world_size // self.sequence_parallel

    @property
    def data_parallel_rank(self) -> int:
        return self.rank // self.sequence_parallel

    @property
    def is_group_leader(self) -> bool:
        """The first rank of its sequence-parallel group (every rank without one)."""
        return self.rank % self.sequence_parallel == 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1


def init_distributed(device: str = "auto") -> DistInfo:
    """Join the process group that torchrun describes in the environment (or run alone)."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    use_cuda = torch.cuda.is_available() and device in ("auto", "cuda")
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    chosen = (
        (f"cuda:{local_rank}" if world > 1 else "cuda")
        if use_cuda
        else (device if device not in ("auto", "cuda") else "cpu")
    )
    if world == 1:
        return DistInfo(device=chosen)
    if not dist.is_initialized():
        if use_cuda:
            torch.cuda.set_device(local_rank)
        dist.init_process_group("nccl" if use_cuda else "gloo")
    return DistInfo(
        rank=dist.get_rank(), world_size=dist.get_world_size(), local_rank=local_rank, device=chosen
    )


def with_sequence_groups(info: DistInfo, size: int) -> DistInfo:
    """`info` with sequence-parallel groups of `size` consecutive ranks (`size` divides the
    world size: `config.check_world_size`); every rank creates every group, in order."""
    if size == 1:
        return info
    group, _ = dist.new_subgroups(group_size=size)
    return replace(info, sequence_parallel=size, sequence_group=group)


def all_reduce(value: float, op: Literal["sum", "max"] = "sum") -> float:
    """Sum or max of a float over the ranks of the default group (identity when running
    alone)."""
    if not dist.is_initialized() or dist.get_world_size() == 1:
        return value
    tensor = torch.tensor([value], dtype=torch.float64)
    if dist.get_backend() == "nccl":
        tensor = tensor.cuda()
    dist.all_reduce(tensor, op=dist.ReduceOp.MAX if op == "max" else dist.ReduceOp.SUM)
    return float(tensor.item())


def barrier() -> None:
    if dist.is_initialized() and dist.get_world_size() > 1:
        dist.barrier()


def decoder_layers(model: torch.nn.Module) -> list[torch.nn.Module]:
    """The transformer blocks of the language model (classes named `*DecoderLayer`)."""
    return [m for m in model.modules() if type(m).__name__.endswith("DecoderLayer")]


def apply_fsdp(model: torch.nn.Module, *, bf16: bool, cpu_offload: bool = False) -> torch.nn.Module:
    """`fully_shard` each decoder layer, then the root (which holds embeddings, head and,
    unless it is sharded separately, the vision tower). bf16 parameters with fp32 gradient
    reduction on GPU; fp32 on CPU. FSDP averages gradients over ranks; the update scales
    each rank's loss by the world size because it is already normalized by the global
    token count (gloo has no pre-multiplied sum to change the divisor instead)."""
    from videorl.versions import require

    require("torch", ">=2.6", "FSDP2 sharding (fully_shard)")
    from torch.distributed.fsdp import CPUOffloadPolicy, MixedPrecisionPolicy, fully_shard

    policy = (
        MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        if bf16
        else MixedPrecisionPolicy()
    )
    kwargs: dict[str, Any] = {"mp_policy": policy}
    if cpu_offload:
        kwargs["offload_policy"] = CPUOffloadPolicy()
    for layer in decoder_layers(model):
        fully_shard(layer, **kwargs)
    fully_shard(model, **kwargs)
    return model


def full_state_dict(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The unsharded weights on every rank (for the rollout engine's copy)."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    if not dist.is_initialized() or dist.get_world_size() == 1:
        return model.state_dict()
    state = get_model_state_dict(
        model, options=StateDictOptions(full_state_dict=True, cpu_offload=False)
    )
    # A module's state dict maps names to its parameters and buffers, gathered here into
    # whole tensors (full_state_dict); torch declares the general checkpoint value type.
    return cast(dict[str, torch.Tensor], state)


def shard_indices(indices: list[int], info: DistInfo) -> list[int]:
    """This rank's contiguous share of a step's prompts (whole groups stay on one rank): its
    data-parallel group's share, the same on every rank of a sequence-parallel group."""
    per_group = len(indices) // info.data_parallel_size
    start = info.data_parallel_rank * per_group
    return indices[start : start + per_group]


def reduce_metrics(metrics: dict[str, Any], info: DistInfo) -> dict[str, Any]:
    """Every rank gets each numeric metric combined over the ranks by its declared reduction
    (`videorl.reduction.combine`: a summed one adds up, a plain number is the mean over the
    ranks that report it), as the float the sinks log (`logged`); lists are concatenated. A
    sequence-parallel group's ranks hold the same rows, so only its first rank's metrics
    count."""
    if not info.enabled:
        return logged(metrics)
    gathered: list[dict[str, Any]] = [{} for _ in range(info.world_size)]
    dist.all_gather_object(gathered, metrics)
    gathered = gathered[:: info.sequence_parallel]
    merged: dict[str, Any] = {}
    for key in {k for m in gathered for k in m}:
        values = [m[key] for m in gathered if key in m and m[key] is not None]
        if values and all(isinstance(v, (int, float, Metric)) for v in values):
            merged[key] = combine([(value, 1.0) for value in values])
        elif values and all(isinstance(v, list) for v in values):
            merged[key] = [item for v in values for item in v]
    return logged(merged)
