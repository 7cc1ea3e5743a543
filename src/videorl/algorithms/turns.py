"""Per-turn (per-action) rewards credited to that turn's tokens (`algorithm.turn_rewards`,
docs/methods/framethinker.md).

A multi-turn row i has its trajectory reward `R_i` (the reward's `overall`) and, from a
reward that splits it by model turn, the part `r_{i,t}` of it that turn t earned (the
components `turn/1`, `turn/2`, ...; `TURN_PREFIX`). A turn's tokens are credited with the
reward still to come when the turn starts, not with what earlier turns earned:

    G_{i,t} = R_i - sum_{k < t} r_{i,k}          (G_{i,1} = R_i)
    A_{i,t} = (G_{i,t} - mean_g R) / (std_g R + eps)     grpo
    A_{i,t} =  G_{i,t} - mean_g R                          dr_grpo

with the group's mean and (unbiased) std of the trajectory rewards R as the baseline, as
GRPO's. Without turn rewards (every r = 0) this is GRPO exactly: every token gets A_i. A
group whose R are all equal gets 0 everywhere, as in GRPO.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
from torch import Tensor

from videorl.algorithms.groups import group_stats

TURN_PREFIX = "turn/"
TURN_ESTIMATORS = ("grpo", "dr_grpo")


def turn_reward_table(components: Sequence[Mapping[str, float]]) -> Tensor:
    """[B, K] the rewards `r_{i,t}` (column t - 1 for turn t) read from each row's
    `turn/<t>` components; 0 where a row has none (K = 1 when no row has any)."""
    turns = [
        {
            int(key[len(TURN_PREFIX) :]): float(value)
            for key, value in parts.items()
            if _is_turn(key)
        }
        for parts in components
    ]
    width = max((max(t) for t in turns if t), default=1)
    table = torch.zeros(len(components), width)
    for row, found in enumerate(turns):
        for turn, value in found.items():
            table[row, turn - 1] = value
    return table


def _is_turn(key: str) -> bool:
    return (
        key.startswith(TURN_PREFIX)
        and key[len(TURN_PREFIX) :].isdigit()
        and key != TURN_PREFIX + "0"
    )


@torch.no_grad()
def turn_advantages(
    rewards: Tensor,
    turn_rewards: Tensor,
    group_ids: Tensor,
    *,
    estimator: str = "grpo",
    std_eps: float = 1e-6,
) -> Tensor:
    """[B, K] `A_{i,t}` of the module docstring from `rewards` [B] (R), `turn_rewards`
    [B, K] (r) and the rows' `group_ids` [B]."""
    stats = group_stats(rewards, group_ids)
    earlier = torch.cumsum(turn_rewards, dim=1) - turn_rewards  # sum_{k < t} r_{i,k}
    centered = rewards[:, None] - earlier - stats.per_row(stats.mean)[:, None]
    if estimator == "grpo":
        centered = centered / (stats.per_row(stats.std)[:, None] + std_eps)
    flat = stats.per_row(stats.uniform)[:, None]
    return torch.where(flat, torch.zeros_like(centered), centered)


def spread_over_tokens(advantages: Tensor, turns: Tensor) -> Tensor:
    """[B, R] each token's advantage `advantages[i, turns[i, j] - 1]` ([B, K] by turn, turns
    [B, R] 1-based; a turn past K takes the last column)."""
    index = (turns - 1).clamp(0, advantages.shape[1] - 1)
    return advantages.gather(1, index)
