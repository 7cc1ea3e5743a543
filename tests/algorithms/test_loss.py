"""The policy loss (docs/methods.md#policy-loss)."""

import math

import pytest
import torch

from videorl.algorithms.loss import (
    AGGREGATIONS,
    KL_TYPES,
    PolicyLossConfig,
    kl_penalty,
    policy_loss,
)
from videorl.errors import ConfigError

F64 = torch.float64


def t(values, grad=False):
    return torch.tensor(values, dtype=F64, requires_grad=grad)


def config(**kwargs):
    return PolicyLossConfig(**kwargs)


RHO = [1.5, 0.5, 0.5, 5.0, 2.0]
A = [1.0, 1.0, -1.0, -1.0, -1.0]


def ppo_case(**kwargs):
    logp = t([[math.log(r) for r in RHO]], grad=True)
    old = torch.zeros(1, 5, dtype=F64)
    mask = torch.ones(1, 5, dtype=torch.bool)
    cfg = config(clip_low=0.1, clip_high=0.3, **kwargs)
    return logp, policy_loss(logp, old, t([A]), mask, config=cfg)


def test_ppo_clip_with_separate_epsilons_and_dual_clip():
    # per token: max(-1.5, -1.3), max(-0.5, -0.9), max(0.5, 0.9), min(max(5, 1.3), 3),
    # min(max(2, 1.3), 3)
    logp, result = ppo_case()
    assert abs(result.loss.item() - (-1.3 - 0.5 + 0.9 + 3.0 + 2.0) / 5) < 1e-12
    assert abs(result.metrics["actor/clip_frac"] - 2 / 5) < 1e-12
    assert abs(result.metrics["actor/dual_clip_frac"] - 1 / 5) < 1e-12
    result.loss.backward()
    # d(-A rho)/dlogp = -A rho where unclipped, 0 where a clip binds
    expected = torch.tensor([[0.0, -0.5, 0.0, 0.0, 2.0]], dtype=F64) / 5
    torch.testing.assert_close(logp.grad, expected)


def test_dual_clip_off():
    _, result = ppo_case(dual_clip=None)
    assert abs(result.loss.item() - (-1.3 - 0.5 + 0.9 + 5.0 + 2.0) / 5) < 1e-12


def test_off_policy_rows_use_plain_likelihood_without_clipping():
    logp = t([[-0.5, -1.0], [-0.5, -1.0]], grad=True)
    old = torch.full((2, 2), -5.0, dtype=F64)  # ratio e^4.5: would be clipped
    mask = torch.ones(2, 2, dtype=torch.bool)
    off = torch.tensor([True, False])
    result = policy_loss(logp, old, t([2.0, 2.0]), mask, config=config(), off_policy=off)
    on_policy_row = -2.0 * 1.2 * 2  # two clipped tokens
    assert abs(result.loss.item() - ((-2.0 * -1.5) + on_policy_row) / 4) < 1e-12
    result.loss.backward()
    torch.testing.assert_close(logp.grad, t([[-0.5, -0.5], [0.0, 0.0]]))
    assert result.metrics["actor/off_policy_tokens"] == 2


TOKEN_A = [[1.0, 2.0, 3.0], [4.0, 0.0, 0.0]]
TOKEN_MASK = torch.tensor([[1, 1, 1], [1, 0, 0]], dtype=torch.bool)


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("token-mean", -10 / 4),
        ("seq-mean-token-mean", (-2 + -4) / 2),
        ("seq-mean-token-sum", (-6 + -4) / 2),
        ("seq-mean-token-sum-norm", (-6 / 4 + -4 / 4) / 2),
    ],
)
def test_aggregations(mode, expected):
    logp = t([[-1.0, -2.0, -0.5], [-0.3, 7.0, 7.0]])
    cfg = config(aggregation=mode, max_length=4)
    result = policy_loss(logp, logp.detach(), t(TOKEN_A), TOKEN_MASK, config=cfg)
    assert abs(result.loss.item() - expected) < 1e-12


def random_batch(seed, rows=8, length=6, topk=None):
    generator = torch.Generator().manual_seed(seed)
    shape = (rows, length) if topk is None else (rows, length, topk)
    logp = -torch.rand(shape, generator=generator, dtype=F64) * 3
    old = logp + 0.3 * torch.randn(shape, generator=generator, dtype=F64)
    ref = logp + 0.2 * torch.randn(shape, generator=generator, dtype=F64)
    advantages = torch.randn(shape, generator=generator, dtype=F64)
    lengths = torch.randint(0, length + 1, (rows,), generator=generator)
    lengths[2] = 0  # an empty response
    mask = torch.arange(length)[None, :] < lengths[:, None]
    entropy = torch.rand(rows, length, generator=generator, dtype=F64)
    off = torch.rand(rows, generator=generator) < 0.3
    return logp, old, ref, advantages, mask, entropy, off


@pytest.mark.parametrize("mode", AGGREGATIONS)
def test_loss_and_gradients_do_not_depend_on_micro_batching(mode):
    logp, old, ref, advantages, mask, entropy, off = random_batch(0)
    cfg = config(aggregation=mode, max_length=6, kl_coef=0.05, entropy_coef=0.01)
    tokens = float(mask.sum())
    sequences = int((mask.sum(-1) > 0).sum())

    def run(slices, global_counts):
        leaf = logp.clone().requires_grad_(True)
        total = 0.0
        for rows in slices:
            result = policy_loss(
                leaf[rows],
                old[rows],
                advantages[rows],
                mask[rows],
                config=cfg,
                global_token_count=tokens if global_counts else None,
                num_sequences_global=sequences if global_counts else None,
                ref_logp=ref[rows],
                entropy=entropy[rows],
                off_policy=off[rows],
            )
            result.loss.backward()
            total += result.loss.item()
        return total, leaf.grad

    whole, whole_grad = run([slice(0, 8)], global_counts=False)
    split, split_grad = run([slice(i, i + 2) for i in range(0, 8, 2)], global_counts=True)
    assert abs(whole - split) < 1e-12
    torch.testing.assert_close(whole_grad, split_grad, atol=1e-12, rtol=0)
    assert torch.isfinite(whole_grad).all()


def test_uneven_micro_batches_need_the_global_count():
    logp, old, _, advantages, mask, _, _ = random_batch(1)
    cfg = config()
    whole = float(policy_loss(logp, old, advantages, mask, config=cfg).loss)
    local = sum(
        float(policy_loss(logp[r], old[r], advantages[r], mask[r], config=cfg).loss)
        for r in (slice(0, 1), slice(1, 8))
    )
    assert abs(whole - local) > 1e-6  # averaging local means is not the global mean


def test_kl_estimators():
    logp, ref = t([-1.0, -2.0]), t([-1.5, -2.0])
    torch.testing.assert_close(kl_penalty(logp, ref, "k1"), t([0.5, 0.0]))
    torch.testing.assert_close(kl_penalty(logp, ref, "k3"), t([math.exp(-0.5) - 0.5, 0.0]))
    assert (kl_penalty(torch.randn(100, dtype=F64), torch.randn(100, dtype=F64)) >= 0).all()


def test_k3_is_clamped_at_10_as_verl_low_var_kl():
    """ref - logp = 5: exp(5) - 5 - 1 = 142.4 unclamped; verl and EasyR1 clamp to 10."""
    logp, ref = t([-6.0, -1.0]), t([-1.0, -1.2])
    k3 = kl_penalty(logp, ref, "k3")
    assert float(k3[0]) == 10.0
    assert float(k3[1]) == pytest.approx(math.exp(-0.2) + 0.2 - 1)


def test_video_r1_k3_clamps_the_log_ratio_not_the_estimate():
    """Video-R1 grpo_trainer.py: x = clamp(ref - logp, -10, 10); k3 = exp(x) - x - 1.
    ref - logp = 5: 142.4 (verl's k3: 10); ref - logp = 12: x = 10, exp(10) - 11."""
    logp, ref = t([-6.0, -13.0, -1.0]), t([-1.0, -1.0, -1.2])
    k3 = kl_penalty(logp, ref, "k3_unclipped")
    assert float(k3[0]) == pytest.approx(math.exp(5) - 6)
    assert float(k3[1]) == pytest.approx(math.exp(10) - 11)
    assert float(k3[2]) == pytest.approx(math.exp(-0.2) + 0.2 - 1)
    logp = logp.clone().requires_grad_(True)
    kl_penalty(logp, ref, "k3_unclipped").sum().backward()
    assert float(logp.grad[0]) == pytest.approx(-(math.exp(5) - 1))  # verl's k3: 0 there


def test_verl_kl_forms_worked_example():
    """verl core_algos.py kl_penalty: logp = -6, ref = -1 (x = ref - logp = 5) and logp = -1.5,
    ref = -1 (x = 0.5). Values: k1 = logp - ref, k2 (mse) = (logp - ref)^2 / 2, abs = |logp -
    ref|; the '+' forms keep their value and take k2's gradient logp - ref."""
    logp, ref = t([-6.0, -1.5]), t([-1.0, -1.0])
    values = {kind: kl_penalty(logp, ref, kind).tolist() for kind in KL_TYPES}
    assert values["k1"] == [-5.0, -0.5] and values["k1+"] == [-5.0, -0.5]
    assert values["k2"] == [12.5, 0.125]
    assert values["abs"] == [5.0, 0.5] and values["abs+"] == [5.0, 0.5]
    k3_small = math.exp(0.5) - 1.5  # 0.1487
    assert values["k3"] == pytest.approx([10.0, k3_small])
    assert values["k3+"] == pytest.approx([10.0, k3_small])
    gradients = {}
    for kind in KL_TYPES:
        leaf = logp.clone().requires_grad_(True)
        kl_penalty(leaf, ref, kind).sum().backward()
        gradients[kind] = leaf.grad.tolist()
    for kind in ("k2", "k1+", "abs+", "k3+"):  # k2's gradient, logp - ref
        assert gradients[kind] == [-5.0, -0.5], kind
    assert gradients["k1"] == [1.0, 1.0]
    assert gradients["abs"] == [-1.0, -1.0]
    assert gradients["k3"] == pytest.approx([0.0, 1 - math.exp(0.5)])  # clipped at 10: none


def test_straight_through_kl_in_the_loss():
    """kl_coef 0.1, k3+, two tokens at logp = ref - 0.5: the loss is 0.1 x mean k3, its
    gradient 0.1 x (logp - ref) / 2 per token (token-mean over 2 tokens)."""
    logp = t([[-1.5, -2.5]]).requires_grad_(True)
    ref, mask, zero = t([[-1.0, -2.0]]), torch.ones(1, 2), t([0.0])
    result = policy_loss(
        logp, logp.detach(), zero, mask, config=config(kl_coef=0.1, kl_type="k3+"), ref_logp=ref
    )
    assert float(result.loss.detach()) == pytest.approx(0.1 * (math.exp(0.5) - 1.5))
    result.loss.backward()
    assert logp.grad[0].tolist() == pytest.approx([0.1 * -0.5 / 2] * 2)
    assert result.metrics["actor/kl"] == pytest.approx(math.exp(0.5) - 1.5)


def test_kl_and_entropy_terms():
    logp = t([[-1.0, -2.0]])
    ref = t([[-1.5, -2.0]])
    entropy = t([[0.4, 0.6]])
    mask = torch.ones(1, 2, dtype=torch.bool)
    zero = torch.zeros(1, 2, dtype=F64)
    base = policy_loss(logp, logp, zero, mask, config=config())
    assert float(base.loss) == 0.0
    with_kl = policy_loss(
        logp, logp, zero, mask, config=config(kl_coef=0.1, kl_type="k1"), ref_logp=ref
    )
    assert abs(float(with_kl.loss) - 0.1 * 0.5 / 2) < 1e-12
    assert abs(with_kl.metrics["actor/kl"] - 0.25) < 1e-12  # type: ignore[operator]  # a mean: a plain float
    with_entropy = policy_loss(
        logp, logp, zero, mask, config=config(entropy_coef=0.2), entropy=entropy
    )
    assert abs(float(with_entropy.loss) - (-0.2 * 0.5)) < 1e-12
    assert abs(with_entropy.metrics["actor/entropy"] - 0.5) < 1e-12  # type: ignore[operator]  # a mean: a plain float


def test_row_advantages_broadcast_to_tokens():
    logp, old, _, _, mask, _, _ = random_batch(2)
    rows = torch.randn(8, dtype=F64)
    broadcast = policy_loss(logp, old, rows, mask, config=config())
    explicit = policy_loss(logp, old, rows[:, None].expand(8, 6), mask, config=config())
    assert float(broadcast.loss) == float(explicit.loss)


def test_topk_loss_sums_over_ids():
    logp, old, _, advantages, mask, _, _ = random_batch(3, topk=2)
    cfg = config()
    tokens = float(mask.sum())
    joint = policy_loss(logp, old, advantages, mask, config=cfg, global_token_count=tokens)
    per_id = sum(
        float(
            policy_loss(
                logp[..., j],
                old[..., j],
                advantages[..., j],
                mask,
                config=cfg,
                global_token_count=tokens,
            ).loss
        )
        for j in range(2)
    )
    assert abs(joint.loss.item() - per_id) < 1e-12


@pytest.mark.parametrize("mode", AGGREGATIONS)
def test_empty_masks_and_bad_padding_give_no_nan(mode):
    logp = t([[-1.0, float("nan")], [float("-inf"), 5.0]], grad=True)
    old = t([[-1.0, float("inf")], [0.0, float("nan")]])
    mask = torch.tensor([[True, False], [False, False]])
    cfg = config(aggregation=mode, max_length=2, kl_coef=0.1)
    result = policy_loss(
        logp,
        old,
        t([1.0, -1.0]),
        mask,
        config=cfg,
        ref_logp=old,
        entropy=t([[0.1, float("nan")], [0.2, 0.3]]),
    )
    result.loss.backward()
    assert math.isfinite(result.loss.item()) and torch.isfinite(logp.grad).all()
    assert all(math.isfinite(v) for v in result.metrics.values())  # type: ignore[arg-type]  # every loss metric is a mean: a plain float
    empty = policy_loss(
        logp,
        old,
        t([1.0, 1.0]),
        torch.zeros(2, 2, dtype=torch.bool),
        config=cfg,
        global_token_count=0.0,
        num_sequences_global=0,
    )
    assert empty.loss.item() == 0.0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"clip_low": 1.0}, "clip_low=1.0"),
        ({"dual_clip": 1.0}, "dual_clip=1.0"),
        ({"aggregation": "mean"}, "'mean'"),
        ({"aggregation": "seq-mean-token-sum-norm"}, "max_length > 0"),
        ({"kl_type": "k2+"}, "'k2\\+'"),
        ({"kl_coef": -0.1}, "kl_coef=-0.1"),
    ],
)
def test_config_validation(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        PolicyLossConfig(**kwargs)
