"""TaRO: advantages of constructed (off-policy) rows and the prefix curriculum
(docs/methods.md#taro-constructed-rows).

Constructed rows start from a caption-built reasoning prefix, so they were not sampled by
the policy. Their advantage is transformed by `off_policy_mode` and their loss is
`-A * logp` without ratio clipping (see `loss.policy_loss`, argument `off_policy`):

    mask  -> max(A, 0)
    clone -> 1[A > 0]
    awr   -> min(exp(A / beta), max_weight)      (exact: exp(A / beta), as TaRO)
    raft  -> 1 for the group's best row, else 0  (exact: 1 for every row at the max, as TaRO)

The curriculum gives the probability `p(step)` that a row is constructed:
`hard` = 1 during the first `warmup_epochs` epochs, then 0; `linear` =
`max(0, 1 - step / warmup_steps)`. Each row draws independently.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

import torch
from torch import Tensor

from videorl.algorithms.groups import check_rows, dense_group_index, group_max
from videorl.config.constraints import Checked, Ge, Gt
from videorl.errors import ConfigError

OffPolicyMode = Literal["mask", "clone", "awr", "raft"]
Schedule = Literal["hard", "linear"]


@dataclass(frozen=True)
class OffPolicyConfig(Checked):
    """`mode`: one of `mask` (default), `clone`, `awr`, `raft`. `awr_beta` is AWR's
    temperature and `awr_max_weight` caps exp(A / beta) so that a large advantage cannot
    overflow the loss. `exact`: TaRO's own formulas (`verl/trainer/ppo/core_algos.py`):
    `awr` uncapped, `raft` = 1 for every row whose advantage equals its group's maximum
    (ties and all-equal groups included)."""

    mode: OffPolicyMode = "mask"
    """Loss on the constructed (off-policy) rows: mask, clone, awr or raft."""
    awr_beta: Annotated[float, Gt(0)] = 1.0
    """AWR temperature beta."""
    awr_max_weight: Annotated[float, Gt(0)] = 20.0
    """Cap on AWR's weight exp(A / beta)."""
    exact: bool = False
    """Use TaRO's own formulas (awr uncapped, raft keeps every row at the group maximum)."""


@torch.no_grad()
def best_row_of_group(advantages: Tensor, group_ids: Tensor) -> Tensor:
    """`[B]` bool: the row with the largest advantage of its group, ties to the lower row
    index; a group whose best advantage is not positive (e.g. all rows tie) has none."""
    index, num_groups = dense_group_index(group_ids)
    best = group_max(advantages, index, num_groups, initial=float("-inf"))
    is_max = (advantages == best[index]) & (advantages > 0)
    rows = torch.arange(advantages.numel(), device=advantages.device, dtype=torch.float64)
    candidates = torch.where(is_max, rows, torch.full_like(rows, float("inf")))
    first = -group_max(-candidates, index, num_groups, initial=float("-inf"))
    return is_max & (rows == first[index])


@torch.no_grad()
def off_policy_advantages(
    advantages: Tensor, group_ids: Tensor, off_policy: Tensor, config: OffPolicyConfig | None = None
) -> Tensor:
    """Transform the advantages `[B]` of the constructed rows (`off_policy [B]` bool) by
    `config.mode` (module docstring); on-policy rows pass through unchanged. `raft` ranks
    each constructed row against every row of its group."""
    config = config or OffPolicyConfig()
    check_rows(group_ids, advantages=advantages, off_policy=off_policy)
    if config.mode == "mask":
        transformed = advantages.clamp_min(0.0)
    elif config.mode == "clone":
        transformed = (advantages > 0).to(advantages.dtype)
    elif config.mode == "awr":
        transformed = (advantages / config.awr_beta).exp()
        if not config.exact:
            transformed = transformed.clamp_max(config.awr_max_weight)
    elif config.exact:
        index, num_groups = dense_group_index(group_ids)
        best = group_max(advantages, index, num_groups, initial=float("-inf"))
        transformed = (advantages == best[index]).to(advantages.dtype)
    else:
        transformed = best_row_of_group(advantages, group_ids).to(advantages.dtype)
    return torch.where(off_policy.bool(), transformed, advantages)


@dataclass(frozen=True)
class CurriculumConfig(Checked):
    """`schedule`: `hard` (needs `warmup_epochs`) or `linear` (needs `warmup_steps` > 0)."""

    schedule: Schedule = "hard"
    """How constructed rows fade out: hard (after warmup_epochs) or linear (over warmup_steps)."""
    warmup_epochs: Annotated[int, Ge(0)] = 1
    """hard: epochs with constructed rows."""
    warmup_steps: Annotated[int, Ge(0)] = 0
    """linear: steps over which constructed rows fade out (> 0 for linear)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.schedule == "linear" and self.warmup_steps <= 0:
            raise ConfigError(
                f"schedule='linear' needs warmup_steps > 0, got {self.warmup_steps}; set "
                "warmup_steps"
            )


def constructed_probability(step: int, epoch: int, config: CurriculumConfig) -> float:
    """`p(step)`: `hard` = 1 if epoch < warmup_epochs else 0; `linear` =
    max(0, 1 - step / warmup_steps). Steps and epochs count from 0."""
    if config.schedule == "hard":
        return 1.0 if epoch < config.warmup_epochs else 0.0
    return max(0.0, 1.0 - step / config.warmup_steps)


def draw_constructed(
    shape: int | tuple[int, ...], probability: float, generator: torch.Generator | None = None
) -> Tensor:
    """`shape` bool (`[prompts, n]` in the loop): each row is constructed independently with
    `probability` (the curriculum's p(step)); `generator` None draws from torch's global RNG,
    which checkpoints save and restore."""
    if not 0.0 <= probability <= 1.0:
        raise ValueError(f"probability={probability} must be in [0, 1]")
    return torch.rand(shape, generator=generator) < probability
