"""OPD, OPDVR and GRPD token advantages (docs/methods.md#on-policy-distillation)."""

import math
import types

import pytest
import torch
from tests.algorithms.tensors import F64, ids, t

from videorl.algorithms import get_estimator
from videorl.algorithms.distill import (
    DistillConfig,
    grpd,
    grpd_scale,
    opd,
    opdvr,
    token_rewards,
    verifier_gate,
)
from videorl.errors import ConfigError
from videorl.models.loading import check_same_tokenizer

TEACHER = t([[-0.5, -2.0, -1.0], [-1.0, -0.1, -3.0], [-0.2, -0.2, -0.2]])
STUDENT = t([[-1.0, -1.0, -1.0], [-0.5, -0.6, -1.0], [-0.7, -0.1, -9.0]])
MASK = torch.tensor([[1, 1, 1], [1, 1, 0], [1, 1, 1]], dtype=torch.bool)
D = [[0.5, -1.0, 0.0], [-0.5, 0.5, 0.0], [0.5, -0.1, 8.8]]  # teacher - student, masked


def close(actual, expected, atol=1e-9):
    torch.testing.assert_close(actual, t(expected), atol=atol, rtol=0)


def test_opd_token_reward_is_the_masked_log_ratio():
    close(token_rewards(TEACHER, STUDENT, MASK), D)
    result = opd(TEACHER, STUDENT, MASK)
    close(result.advantages, D)
    assert get_estimator("opd").kind == "token"


def test_opdvr_gate_on_a_worked_batch():
    scores = t([1.0, 0.0, 0.3])  # correct, incorrect (0 is not > 0), correct
    result = opdvr(TEACHER, STUDENT, MASK, scores=scores, group_ids=ids([0, 0, 0]))
    close(result.advantages, [[0.5, 0.0, 0.0], [-0.5, 0.0, 0.0], [0.5, 0.0, 8.8]])
    assert abs(result.metrics["distill/frac_correct"] - 2 / 3) < 1e-12
    # zeroed: row 0 token 1, row 1 token 1, row 2 token 1 -> 3 of 8 masked tokens
    assert abs(result.metrics["distill/frac_zeroed"] - 3 / 8) < 1e-12


def test_gate_signs_hold_for_any_input():
    generator = torch.Generator().manual_seed(0)
    for _ in range(50):
        rewards = torch.randn(6, 5, generator=generator, dtype=F64)
        scores = torch.rand(6, generator=generator, dtype=F64) - 0.3
        gated, correct = verifier_gate(rewards, scores, threshold=0.1)
        assert (gated[correct] >= 0).all() and (gated[~correct] <= 0).all()
        inverse, same = verifier_gate(rewards, scores, threshold=0.1, mode="inverse")
        assert torch.equal(same, correct)
        assert (inverse[correct] <= 0).all() and (inverse[~correct] >= 0).all()
        swapped, _ = verifier_gate(rewards, -scores, threshold=-0.1)  # flips correctness
        torch.testing.assert_close(inverse, swapped)
        torch.testing.assert_close(gated + inverse, rewards)


def test_threshold_is_strict():
    _, correct = verifier_gate(t([[1.0]] * 3), t([0.4, 0.5, 0.6]), threshold=0.5)
    assert correct.tolist() == [False, False, True]


def test_grpd_all_correct_group_with_zero_baseline_is_zero():
    scores, groups = t([1.0, 1.0, 1.0]), ids([0, 0, 0])
    result = grpd(TEACHER, STUDENT, MASK, scores=scores, group_ids=groups)
    close(result.advantages, [[0.0] * 3] * 3)
    assert result.metrics["distill/scale_mean"] == 0.0
    config = DistillConfig(baseline=0.5)
    half = grpd(TEACHER, STUDENT, MASK, scores=scores, group_ids=groups, config=config)
    gated = opdvr(TEACHER, STUDENT, MASK, scores=scores, group_ids=groups).advantages
    torch.testing.assert_close(half.advantages, 0.5 * gated)


def test_grpd_scale_mean_only_and_std_normalized():
    scores, groups = t([1.0, 0.0, 0.0, 0.0, 1.0]), ids([0, 0, 0, 0, 1])
    close(grpd_scale(scores, groups), [0.75, 0.25, 0.25, 0.25, 0.0])
    std = 0.5
    close(
        grpd_scale(scores, groups, group_std=True, baseline=0.1),
        [
            0.75 / (std + 1e-6) + 0.1,
            0.25 / (std + 1e-6) + 0.1,
            0.25 / (std + 1e-6) + 0.1,
            0.25 / (std + 1e-6) + 0.1,
            0.1,
        ],
    )


def test_grpd_scales_the_gated_rows():
    scores, groups = t([1.0, 0.0, 0.0]), ids([0, 0, 0])
    result = grpd(TEACHER, STUDENT, MASK, scores=scores, group_ids=groups)
    scale = [2 / 3, 1 / 3, 1 / 3]
    gated = [[0.5, 0.0, 0.0], [-0.5, 0.0, 0.0], [0.0, -0.1, 0.0]]
    close(result.advantages, [[s * v for v in row] for s, row in zip(scale, gated, strict=True)])
    assert abs(result.metrics["distill/scale_min"] - 1 / 3) < 1e-12
    assert abs(result.metrics["distill/scale_mean"] - 4 / 9) < 1e-12


def test_topk_reward_weights_by_student_softmax():
    student = t([[[math.log(0.6), math.log(0.2)]]])
    teacher = t([[[math.log(0.3), math.log(0.4)]]])
    mask = torch.ones(1, 1, dtype=torch.bool)
    p = [0.75, 0.25]  # softmax over the two student log-probs
    expected = [
        [[-(math.log(0.6) - math.log(0.3)) * p[0], -(math.log(0.2) - math.log(0.4)) * p[1]]]
    ]
    close(token_rewards(teacher, student, mask, topk=2), expected)
    config = DistillConfig(topk=2)
    result = opdvr(teacher, student, mask, scores=t([0.0]), group_ids=ids([0]), config=config)
    close(result.advantages, [[[expected[0][0][0], 0.0]]])  # incorrect row keeps only < 0
    assert result.metrics["distill/frac_zeroed"] == 0.5


def test_shapes_are_checked():
    with pytest.raises(ValueError, match="expected \\(3, 3, 2\\)"):
        opd(TEACHER, STUDENT, MASK, config=DistillConfig(topk=2))
    with pytest.raises(ValueError, match="needs `scores`"):
        get_estimator("opdvr")(TEACHER, STUDENT, MASK, scores=None, group_ids=None)


def test_empty_mask_has_no_nan():
    empty = torch.zeros(3, 3, dtype=torch.bool)
    result = grpd(TEACHER, STUDENT, empty, scores=t([1.0, 0.0, 1.0]), group_ids=ids([0, 0, 1]))
    assert (result.advantages == 0).all()
    assert all(math.isfinite(v) for v in result.metrics.values())


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"gate_mode": "flip"}, "gate_mode='flip'"),
        ({"baseline": -1}, "baseline=-1"),
        ({"topk": -1}, "topk=-1"),
    ],
)
def test_config_validation(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        DistillConfig(**kwargs)


def test_teacher_must_share_the_tokenizer():
    def model(vocab):
        return types.SimpleNamespace(tokenizer=types.SimpleNamespace(get_vocab=lambda: vocab))

    check_same_tokenizer(model({"a": 0, "b": 1}), model({"b": 1, "a": 0}))
    with pytest.raises(ConfigError, match="tokenizer differs"):
        check_same_tokenizer(model({"a": 0, "b": 1}), model({"a": 0, "c": 1}))
