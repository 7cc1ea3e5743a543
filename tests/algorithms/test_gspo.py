"""The policy-loss registry and GSPO (Zheng et al. 2025, arXiv 2507.18071, eq. 5-10;
verl `compute_policy_loss_gspo` in verl/trainer/ppo/core_algos.py)."""

import math

import pytest
import torch

from videorl.algorithms.loss import PolicyLossConfig, policy_loss
from videorl.algorithms.policy_losses import (
    POLICY_LOSSES,
    PolicyTerms,
    get_policy_loss,
    policy_loss_names,
    register_policy_loss,
)
from videorl.config import load_config
from videorl.errors import ConfigError

F64 = torch.float64
LN = math.log


def worked_case(**kwargs):
    """Three sequences, old log-probs 0 (module docstring of gspo.py for the formula):
    row 0: ratios 4 and 1/4 -> s_0 = sqrt(4 * 1/4) = 1, A = +1: inside the range;
    row 1: ratios 1.44 and 1 -> s_1 = 1.2, A = +1: clipped at 1 + 0.1;
    row 2: one token, ratio 1.05, A = -1: inside [0.9, 1.1]."""
    logp = torch.tensor([[LN(4.0), LN(0.25)], [LN(1.44), 0.0], [LN(1.05), 0.0]], dtype=F64)
    logp.requires_grad_(True)
    mask = torch.tensor([[1, 1], [1, 1], [1, 0]], dtype=torch.bool)
    advantages = torch.tensor([1.0, 1.0, -1.0], dtype=F64)
    cfg = PolicyLossConfig(name="gspo", clip_low=0.1, clip_high=0.1, **kwargs)
    result = policy_loss(logp, torch.zeros_like(logp), advantages, mask, config=cfg)
    return logp, result


def test_gspo_worked_example_loss_gradient_and_sequence_clip_fraction():
    logp, result = worked_case()
    # seq-mean-token-mean: (mean(-1, -1) + mean(-1.1, -1.1) + 1.05) / 3
    assert abs(result.loss.item() - (-1.0 - 1.1 + 1.05) / 3) < 1e-12
    result.loss.backward()
    # d/dlogp_t of -A s_i,t = -A s_i; over |y_i| tokens and 3 sequences; 0 where clipped.
    # (PPO would clip row 0's first token, ratio 4, and give it no gradient.)
    expected = torch.tensor([[-1 / 6, -1 / 6], [0.0, 0.0], [1.05 / 3, 0.0]], dtype=F64)
    torch.testing.assert_close(logp.grad, expected)
    assert abs(result.metrics["actor/clip_frac"] - 1 / 3) < 1e-12  # sequences, not tokens
    assert abs(result.metrics["actor/ratio_mean"] - (1.0 + 1.2 + 1.05) / 3) < 1e-12
    assert result.metrics["actor/dual_clip_frac"] == 0.0


def test_gspo_defaults_are_the_published_ones_and_ppo_keeps_its_own():
    gspo = PolicyLossConfig(name="gspo")
    assert (gspo.clip_low, gspo.clip_high) == (3e-4, 4e-4)  # GSPO paper section 5.1
    assert gspo.aggregation == "seq-mean-token-mean"  # verl compute_policy_loss_gspo
    ppo = PolicyLossConfig()
    assert (ppo.name, ppo.clip_low, ppo.clip_high, ppo.aggregation) == (
        "ppo",
        0.2,
        0.2,
        "token-mean",
    )
    explicit = PolicyLossConfig(name="gspo", aggregation="token-mean", clip_high=1e-3)
    assert (explicit.aggregation, explicit.clip_low, explicit.clip_high) == (
        "token-mean",
        3e-4,
        1e-3,
    )
    loaded = load_config(None, ["algorithm.loss.name=gspo"]).algorithm.loss
    assert (loaded.clip_low, loaded.clip_high, loaded.aggregation) == (
        3e-4,
        4e-4,
        "seq-mean-token-mean",
    )


@pytest.mark.parametrize("aggregation", ["token-mean", "seq-mean-token-mean"])
def test_gspo_equals_ppo_when_every_sequence_has_one_token(aggregation):
    """|y_i| = 1: s_i is the token ratio, so GSPO is PPO without the dual clip."""
    gen = torch.Generator().manual_seed(0)
    old = torch.randn(6, 3, generator=gen, dtype=F64)
    base = old + 0.3 * torch.randn(6, 3, generator=gen, dtype=F64)
    advantages = torch.randn(6, generator=gen, dtype=F64)
    mask = torch.zeros(6, 3, dtype=torch.bool)
    mask[torch.arange(6), torch.tensor([0, 1, 2, 0, 1, 2])] = True
    out = {}
    for name in ("ppo", "gspo"):
        logp = base.clone().requires_grad_(True)
        cfg = PolicyLossConfig(
            name=name, clip_low=0.1, clip_high=0.2, dual_clip=None, aggregation=aggregation
        )
        result = policy_loss(logp, old, advantages, mask, config=cfg)
        result.loss.backward()
        out[name] = (result.loss.detach(), logp.grad, result.metrics["actor/clip_frac"])
    assert 0 < out["ppo"][2] < 1  # type: ignore[operator]  # a mean: a plain float; some rows clipped, some not: the case is not trivial
    torch.testing.assert_close(out["gspo"][0], out["ppo"][0])
    torch.testing.assert_close(out["gspo"][1], out["ppo"][1])
    assert abs(out["gspo"][2] - out["ppo"][2]) < 1e-12  # type: ignore[operator]  # a mean: a plain float


def test_gspo_off_policy_rows_and_kl_are_handled_like_ppo():
    logp = torch.tensor([[-0.5, -1.0], [-0.5, -1.0]], dtype=F64, requires_grad=True)
    old = torch.full((2, 2), -5.0, dtype=F64)  # s = e^4.25: clipped for the sampled row
    mask = torch.ones(2, 2, dtype=torch.bool)
    ref = torch.tensor([[-0.5, -1.0], [-1.5, -1.0]], dtype=F64)
    cfg = PolicyLossConfig(name="gspo", kl_coef=0.5, kl_type="k1")
    result = policy_loss(
        logp,
        old,
        torch.tensor([2.0, 2.0], dtype=F64),
        mask,
        config=cfg,
        ref_logp=ref,
        off_policy=torch.tensor([True, False]),
    )
    off_row = (-2.0 * -0.5 + -2.0 * -1.0) / 2  # -A * logp, no ratio
    sampled_row = -2.0 * (1 + 4e-4) + 0.5 * (1.0 + 0.0) / 2  # clipped at 1 + eps_high; k1
    assert abs(result.loss.item() - (off_row + sampled_row) / 2) < 1e-12
    assert result.metrics["actor/clip_frac"] == 1.0  # the one sampled sequence
    assert result.metrics["actor/off_policy_tokens"] == 2.0


def test_gspo_refuses_topk_logprobs():
    logp = torch.zeros(1, 2, 3)
    with pytest.raises(ValueError, match="algorithm.loss.name=ppo"):
        policy_loss(logp, logp, logp, torch.ones(1, 2), config=PolicyLossConfig(name="gspo"))


def test_unknown_loss_name_is_a_config_error_listing_the_registered_ones():
    with pytest.raises(ConfigError, match=r"'gpso'.*did you mean 'gspo'.*\['gspo', 'ppo'\]"):
        PolicyLossConfig(name="gpso")
    with pytest.raises(ConfigError, match="algorithm.loss.name='sapo'"):
        load_config(None, ["algorithm.loss.name=sapo"])
    assert {"ppo", "gspo"} <= set(policy_loss_names())


def test_registering_a_taken_name_fails_and_a_new_loss_is_dispatched():
    with pytest.raises(ConfigError, match="already registered"):
        register_policy_loss("ppo", clip_low=0.2, clip_high=0.2, aggregation="token-mean")(
            lambda *a: None  # type: ignore[arg-type]  # a stub: registration is refused first
        )

    def vanilla_pg(logp, old_logp, advantages, mask, config):
        zeros = torch.zeros_like(logp, dtype=torch.bool)
        return PolicyTerms(loss=-advantages * logp, ratio=logp.detach(), clipped=zeros, dual=zeros)

    register_policy_loss("vanilla_pg", clip_low=0.0, clip_high=0.0, aggregation="token-mean")(
        vanilla_pg
    )
    try:
        cfg = PolicyLossConfig(name="vanilla_pg")
        assert get_policy_loss("vanilla_pg").fn is vanilla_pg and cfg.clip_low == 0.0
        logp = torch.tensor([[-1.0, -2.0]], dtype=F64)
        result = policy_loss(
            logp, logp, torch.tensor([3.0], dtype=F64), torch.ones(1, 2), config=cfg
        )
        assert abs(result.loss.item() - 3.0 * 1.5) < 1e-12
    finally:
        POLICY_LOSSES.pop("vanilla_pg")


def test_resolved_defaults_survive_the_run_config_round_trip(tmp_path):
    from videorl.config.run import save_run_config

    overrides = [
        "algorithm.loss.name=gspo",
        "reward.overlong.enabled=true",
        "reward.overlong.buffer_len=64",
    ]
    config = load_config(None, overrides)
    assert load_config(save_run_config(config, tmp_path)) == config
