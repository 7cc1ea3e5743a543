"""The behaviour correction of async rows (algorithms/behaviour.py): its worked example,
and that the policy loss applies it to stale rows only."""

from __future__ import annotations

import math

import pytest
import torch

from videorl.algorithms.behaviour import BehaviourCorrection, behaviour_weights
from videorl.algorithms.loss import PolicyLossConfig, policy_loss
from videorl.reduction import maxed

PROX = torch.tensor([[-1.0, -0.5]])
BEHAV = torch.tensor([[-1.2, -1.5]])
MASK = torch.ones(1, 2)


@pytest.mark.parametrize(
    ("mode", "expected"),
    [("truncate", [math.exp(0.2), 2.0]), ("mask", [math.exp(0.2), 0.0])],
)
def test_worked_example(mode, expected):
    correction = BehaviourCorrection(BEHAV, torch.tensor([True]), cap=2.0, mode=mode)
    weights, metrics = behaviour_weights(PROX, correction, MASK)
    assert weights[0].tolist() == pytest.approx(expected)
    assert metrics["async/is_weight_max"].value == pytest.approx(math.e)
    assert metrics["async/is_weight_max"] == maxed(metrics["async/is_weight_max"].value)
    assert metrics["async/is_weight_mean"] == pytest.approx((math.exp(0.2) + math.e) / 2)
    assert metrics["async/is_truncated_frac"] == 0.5


def test_current_rows_and_padding_weigh_one():
    correction = BehaviourCorrection(BEHAV.repeat(2, 1), torch.tensor([False, True]), cap=2.0)
    mask = torch.tensor([[1.0, 1.0], [1.0, 0.0]])
    weights, metrics = behaviour_weights(PROX.repeat(2, 1), correction, mask)
    assert weights.flatten().tolist() == pytest.approx([1.0, 1.0, math.exp(0.2), 1.0])
    assert metrics["async/stale_tokens"] == 1


def test_tokens_no_policy_sampled_weigh_one():
    """NaN behaviour log-probs (TaRO's forced prefix, OraRL's annotation rows) are left alone."""
    behav = torch.tensor([[float("nan"), -1.5]])
    correction = BehaviourCorrection(behav, torch.tensor([True]), cap=5.0)
    weights, metrics = behaviour_weights(PROX, correction, MASK)
    assert weights[0].tolist() == pytest.approx([1.0, math.e])
    assert metrics["async/stale_tokens"] == 1
    assert metrics["async/is_weight_mean"] == pytest.approx(math.e)


def test_policy_loss_weights_the_stale_surrogate():
    """At ratio 1 (logp = proximal) the PPO surrogate is -A; a stale row's becomes -w A."""
    config = PolicyLossConfig()
    logp = PROX.clone().requires_grad_(True)
    advantages = torch.tensor([[1.0, 1.0]])
    plain = policy_loss(logp, PROX, advantages, MASK, config=config)
    correction = BehaviourCorrection(BEHAV, torch.tensor([True]), cap=2.0)
    weighted = policy_loss(logp, PROX, advantages, MASK, config=config, behaviour=correction)
    assert float(plain.loss.detach()) == pytest.approx(-1.0)
    assert float(weighted.loss.detach()) == pytest.approx(-(math.exp(0.2) + 2.0) / 2)
    (grad,) = torch.autograd.grad(weighted.loss, logp)
    assert grad[0].tolist() == pytest.approx([-math.exp(0.2) / 2, -1.0])  # w is a constant
