"""Per-turn credit (`algorithms/turns.py`, `algorithm.turn_rewards`): the worked example of
docs/methods/framethinker.md, and GRPO exactly when no turn earns a reward of its own."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from videorl.algorithms.advantages import grpo
from videorl.algorithms.turns import spread_over_tokens, turn_advantages, turn_reward_table
from videorl.config import AlgorithmConfig
from videorl.errors import ConfigError
from videorl.trainer.stages import credit_turns

# docs/methods/framethinker.md, "Worked example": one group of three rows
REWARDS = torch.tensor([1.0, 0.5, 0.0])
COMPONENTS = [{"turn/1": 0.3, "turn/2": 0.7}, {"turn/1": 0.5}, {"turn/1": 0.0, "turn/2": 0.0}]
GROUPS = torch.zeros(3, dtype=torch.long)


def test_the_worked_example():
    table = turn_reward_table(COMPONENTS)
    assert torch.allclose(table, torch.tensor([[0.3, 0.7], [0.5, 0.0], [0.0, 0.0]]))
    # mean 0.5, std 0.5: row 0 turn 1 (1.0 - 0.5) / 0.5 = 1.0, turn 2 (0.7 - 0.5) / 0.5 = 0.4
    by_turn = turn_advantages(REWARDS, table, GROUPS, std_eps=0.0)
    assert torch.allclose(by_turn, torch.tensor([[1.0, 0.4], [0.0, -1.0], [-1.0, -1.0]]), atol=1e-5)
    dr = turn_advantages(REWARDS, table, GROUPS, estimator="dr_grpo")
    assert torch.allclose(dr, torch.tensor([[0.5, 0.2], [0.0, -0.5], [-0.5, -0.5]]), atol=1e-5)


def test_each_token_gets_its_turns_advantage():
    by_turn = torch.tensor([[1.0, 0.4], [0.0, -1.0]])
    # row 0: turn 1 (2 tokens), a tool turn (2 tokens, context only), turn 2 (3 tokens)
    turns = torch.tensor([[1, 1, 1, 1, 2, 2, 2], [1, 1, 1, 1, 1, 1, 1]])
    spread = spread_over_tokens(by_turn, turns)
    assert torch.allclose(spread, torch.tensor([[1, 1, 1, 1, 0.4, 0.4, 0.4], [0.0] * 7]))


def test_without_turn_rewards_it_is_grpo():
    rewards = torch.tensor([0.2, 0.9, 0.4, 1.0, 1.0])
    groups = torch.tensor([0, 0, 0, 1, 1])
    by_turn = turn_advantages(rewards, torch.zeros(5, 3), groups)
    expected = grpo(rewards, groups).advantages
    assert torch.allclose(by_turn, expected[:, None].expand(5, 3))


def test_the_stage_credits_every_token_of_a_batch():
    batch = SimpleNamespace(
        scored_rewards=lambda: REWARDS,
        scored_components=lambda: COMPONENTS,
        group_ids=GROUPS,
        response_turns=lambda: torch.tensor([[1, 1, 2], [1, 1, 1], [1, 2, 2]]),
    )
    config = AlgorithmConfig(turn_rewards=True)
    out = credit_turns(batch, config)  # type: ignore[arg-type]
    assert torch.allclose(out, torch.tensor([[1.0, 1.0, 0.4], [0.0] * 3, [-1.0] * 3]), atol=1e-5)


def test_turn_rewards_need_a_group_baseline_estimator():
    with pytest.raises(ConfigError, match="turn_rewards"):
        AlgorithmConfig(turn_rewards=True, estimator="rloo")
