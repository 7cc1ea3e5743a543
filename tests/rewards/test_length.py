"""Length reward terms: DAPO's overlong shaping (arXiv 2503.14476; verl
verl/workers/reward_manager/dapo.py: `min(-(|y| - (L_max - L_cache)) / L_cache * factor, 0)`)
and Video-R1's length bonus (tulerfeng/Video-R1 src/r1-v/src/open_r1/trainer/grpo_trainer.py
`len_control`: accuracy > 0.1, 320 <= tokens <= 512, +0.2, more than one correct row)."""

import pytest
import torch

from videorl.config import load_config
from videorl.errors import ConfigError
from videorl.rewards import RewardConfig
from videorl.rewards.config import LengthBandConfig, OverlongConfig
from videorl.rewards.length import length_bonus, overlong_penalty
from videorl.rollout.batch import RolloutBatch
from videorl.trainer.stages import add_length_rewards


def test_overlong_penalty_at_the_band_edges():
    # L_max 20, L_cache 8: free up to 12 tokens, then -1/8 per token, -1 at 20 and beyond
    lengths = torch.tensor([5, 12, 13, 16, 20, 25])
    penalty = overlong_penalty(lengths, 20, OverlongConfig(enabled=True, buffer_len=8))
    torch.testing.assert_close(penalty, torch.tensor([0.0, 0.0, -0.125, -0.5, -1.0, -1.0]))
    half = OverlongConfig(enabled=True, buffer_len=8, penalty_factor=0.5)
    torch.testing.assert_close(
        overlong_penalty(torch.tensor([12, 16, 20]), 20, half), torch.tensor([0.0, -0.25, -0.5])
    )


def test_overlong_penalty_with_dapo_published_numbers():
    # recipe/dapo: max_response_length 20480, overlong_buffer.len 4096, penalty_factor 1.0
    cfg = OverlongConfig(enabled=True, buffer_len=4096, penalty_factor=1.0)
    lengths = torch.tensor([16384, 16385, 18432, 20480])
    torch.testing.assert_close(
        overlong_penalty(lengths, 20480, cfg), torch.tensor([0.0, -1 / 4096, -0.5, -1.0])
    )


BAND = LengthBandConfig(enabled=True, min=3, max=5, bonus=0.2, correct_threshold=0.1)


def test_length_bonus_only_for_correct_rows_in_the_band_of_groups_with_two_correct():
    # group 0: correct = task > 0.1 -> rows 0, 1, 4 (0.1 itself is not correct); row 1 is
    # too long (6 > 5), row 2 in the band but wrong -> rows 0 and 4 get +0.2.
    # group 1: one correct row only -> nothing (Video-R1: len(selected_indices) > 1).
    # group 2: the second correct row is not eligible (an annotation row) -> nothing.
    task = torch.tensor([1.0, 1.0, 0.0, 0.1, 0.5, 1.0, 0.0, 1.0, 1.0])
    lengths = torch.tensor([3, 6, 4, 4, 5, 4, 4, 4, 4])
    groups = torch.tensor([0, 0, 0, 0, 0, 1, 1, 2, 2])
    eligible = torch.tensor([True] * 8 + [False])
    bonus = length_bonus(task, lengths, groups, eligible, BAND)
    expected = torch.tensor([0.2, 0.0, 0.0, 0.0, 0.2, 0.0, 0.0, 0.0, 0.0])
    torch.testing.assert_close(bonus, expected)
    single = LengthBandConfig(enabled=True, min=3, max=5, min_correct=1)
    assert length_bonus(task, lengths, groups, eligible, single)[[5, 7]].tolist() == [
        pytest.approx(0.2),
        pytest.approx(0.2),
    ]


def batch_of(lengths, tasks, groups, annotation):
    n = len(lengths)
    return RolloutBatch(
        records=[],
        prompts=[],
        videos=[],
        group_ids=torch.tensor(groups),
        responses=[torch.ones(length, dtype=torch.long) for length in lengths],
        texts=[""] * n,
        is_annotation=torch.tensor(annotation),
        off_policy=torch.zeros(n, dtype=torch.bool),
        truncated=torch.zeros(n, dtype=torch.bool),
        rewards=torch.tensor(tasks),
        components=[{"format": 1.0, "task": t, "overall": t} for t in tasks],
    )


def test_stage_adds_both_terms_to_generated_rows_and_reports_them():
    cfg = RewardConfig(
        overlong=OverlongConfig(enabled=True, buffer_len=4),
        length_band=LengthBandConfig(enabled=True, min=6, max=9, bonus=0.2),
    )
    # budget 10, buffer 4: free up to 6 tokens. Rows: 10 tokens (-1), 8 (-0.5), 4 (0),
    # annotation row 10 tokens (kept as is). Correct rows 0 and 1 (2 in the group), both
    # in 6..9? row 0 has 10 tokens: no; row 1: 8 -> +0.2.
    batch = batch_of([10, 8, 4, 10], [1.0, 1.0, 0.0, 1.0], [0, 0, 0, 0], [False] * 3 + [True])
    out = add_length_rewards(batch, cfg, max_new_tokens=10)
    torch.testing.assert_close(out.rewards, torch.tensor([0.0, 0.7, 0.0, 1.0]))
    assert out.metrics["reward/overlong_penalty_mean"] == pytest.approx(-1.5 / 3)
    assert out.metrics["reward/overlong_frac"] == pytest.approx(2 / 3)
    assert out.metrics["reward/length_bonus_frac"] == pytest.approx(1 / 3)
    assert add_length_rewards(batch, RewardConfig(), max_new_tokens=10) is batch  # both off


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        (["reward.overlong.buffer_len=0"], "reward.overlong.buffer_len=0"),
        (["reward.overlong.penalty_factor=-1"], "reward.overlong.penalty_factor=-1"),
        (["reward.length_band.min=600"], "reward.length_band.max=512 is below"),
        (["reward.length_band.min_correct=0"], "reward.length_band.min_correct=0"),
        (["reward.overlong.size=3"], "reward.overlong.size"),
        (
            ["reward.overlong.enabled=true", "rollout.max_new_tokens=1024"],
            "reward.overlong.buffer_len=4096 exceeds rollout.max_new_tokens=1024",
        ),
        (
            ["reward.length_band.enabled=true", "rollout.max_new_tokens=256"],
            "reward.length_band.min=320 exceeds rollout.max_new_tokens=256",
        ),
    ],
)
def test_bad_length_settings_are_one_line_config_errors(overrides, match):
    with pytest.raises(ConfigError, match=match) as error:
        load_config(None, overrides)
    assert "\n" not in str(error.value)


def test_reward_config_from_dict_builds_the_length_sections():
    cfg = RewardConfig.from_dict({"overlong": {"enabled": True, "buffer_len": 8}})
    assert cfg.overlong == OverlongConfig(enabled=True, buffer_len=8)
    with pytest.raises(ConfigError, match="'reward.length_band.width' is unknown"):
        RewardConfig.from_dict({"length_band": {"width": 3}})


def test_dry_run_plan_names_the_length_terms_and_the_loss():
    from videorl.config.plan import plan_step

    plan = plan_step(
        load_config(
            None,
            [
                "rollout.max_new_tokens=1024",
                "reward.overlong.enabled=true",
                "reward.overlong.buffer_len=256",
                "reward.length_band.enabled=true",
                "algorithm.loss.name=gspo",
            ],
        )
    )
    assert plan.length_terms == "overlong 768..1024 to -1; +0.2 at 320..512 if task > 0.1"
    assert (plan.policy_loss, plan.loss_aggregation) == (
        "gspo (clip 0.0003 / 0.0004)",
        "seq-mean-token-mean",
    )
    assert plan_step(load_config(None)).length_terms == "none"
