"""DAPO's group filter (verl recipe/dapo/src/dapo_ray_trainer.py at 4f80e46,
`RayDAPOTrainer.fit`: keep a prompt when np.std of its rows' metric > 0 or it has one row),
its config, and the batch helpers dynamic sampling uses (group selection, concatenation)."""

from __future__ import annotations

import pytest
import torch

from videorl.algorithms.dynamic_sampling import DynamicSamplingConfig, zero_variance_groups
from videorl.config import load_config
from videorl.errors import ConfigError
from videorl.reduction import summed
from videorl.rollout.batch import RolloutBatch, concat_batches, merge_metrics


def test_worked_example_keeps_groups_with_varied_rewards_and_single_rows():
    # DAPO's acc per trajectory: group 0 all correct, 1 mixed, 2 one row, 3 all wrong
    values = torch.tensor([1.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.5, 0.0, 0.0])
    group_ids = torch.tensor([0, 0, 0, 1, 1, 1, 2, 3, 3])
    keep = zero_variance_groups(values, group_ids)
    assert keep.tolist() == [False, True, True, False]


def test_rows_need_not_be_contiguous_and_empty_groups_are_not_kept():
    values = torch.tensor([0.2, 0.7, 0.2, 0.7])
    group_ids = torch.tensor([1, 0, 1, 0])  # group 0: 0.7, 0.7; group 1: 0.2, 0.2
    assert zero_variance_groups(values, group_ids, num_groups=3).tolist() == [False] * 3
    values = torch.tensor([0.2, 0.7, 0.3, 0.7])  # group 1 now 0.2 vs 0.3
    assert zero_variance_groups(values, group_ids).tolist() == [False, True]


def test_equal_non_binary_values_are_zero_variance_exactly():
    # np.std([0.1, 0.1, 0.1]) is ~1.4e-17 > 0, so DAPO's float test would keep this group
    values = torch.tensor([0.1, 0.1, 0.1], dtype=torch.float64)
    assert zero_variance_groups(values, torch.tensor([0, 0, 0])).tolist() == [False]
    assert zero_variance_groups(torch.zeros(0), torch.zeros(0, dtype=torch.long)).numel() == 0


def test_filter_refuses_mismatched_rows():
    with pytest.raises(ValueError, match="one entry per row"):
        zero_variance_groups(torch.zeros(3), torch.zeros(2, dtype=torch.long))


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        (["algorithm.dynamic_sampling.max_draws=-1"], "max_draws=-1 must be >= 0"),
        (["algorithm.dynamic_sampling.batches_per_draw=0"], "batches_per_draw=0 must be >= 1"),
        (["algorithm.dynamic_sampling.metric='task mean'"], "metric='task mean' is not a name"),
        (["algorithm.dynamic_sampling.on_cap=skip"], "on_cap"),
        (
            ["algorithm.dynamic_sampling.enabled=true", "algorithm.annotation_rows=true"],
            "cannot be combined with algorithm.annotation_rows",
        ),
    ],
)
def test_config_errors_name_the_key(overrides, match):
    with pytest.raises(ConfigError, match=match):
        load_config(None, overrides)


def test_config_defaults_are_off_with_a_cap():
    config = load_config(None, []).algorithm.dynamic_sampling
    assert config == DynamicSamplingConfig()
    assert (config.enabled, config.metric, config.max_draws, config.on_cap) == (
        False,
        "reward",
        10,
        "error",
    )


def _batch(records: list[str], rows_per_group: int, rewards: list[float]) -> RolloutBatch:
    """A batch whose records/prompts/videos are plain strings (the helpers only index them)."""
    n = len(records) * rows_per_group
    lengths = [1 + i % 3 for i in range(n)]
    return RolloutBatch(
        records=list(records),  # type: ignore[arg-type]  # strings stand in: the helpers only index them
        prompts=[f"prompt-{r}" for r in records],  # type: ignore[misc]  # strings stand in
        videos=[f"video-{r}" for r in records],  # type: ignore[misc]  # strings stand in
        group_ids=torch.arange(len(records)).repeat_interleave(rows_per_group),
        responses=[torch.full((k,), i) for i, k in enumerate(lengths)],
        texts=[f"{records[i // rows_per_group]}:{i}" for i in range(n)],
        is_annotation=torch.zeros(n, dtype=torch.bool),
        off_policy=torch.zeros(n, dtype=torch.bool),
        truncated=torch.zeros(n, dtype=torch.bool),
        rewards=torch.tensor(rewards),
        components=[{"task": r} for r in rewards],
        advantages=torch.ones(n, max(lengths)),
        metrics={"reward/mean": sum(rewards) / n, "reward/seconds": summed(1.0)},
    )


def test_take_groups_compacts_the_prompts_and_renumbers_the_rows():
    batch = _batch(["a", "b", "c"], 2, [0, 1, 2, 3, 4, 5])
    picked = batch.take_groups([2, 0])
    assert picked.records == ["c", "a"] and picked.videos == ["video-c", "video-a"]  # type: ignore[comparison-overlap]  # strings stand in
    assert picked.group_ids.tolist() == [0, 0, 1, 1]
    assert picked.texts == ["c:4", "c:5", "a:0", "a:1"]
    assert picked.rewards.tolist() == [4, 5, 0, 1]
    assert picked.advantages.shape == (4, 3)  # the longest kept response
    assert batch.take_groups([]).num_rows == 0


def test_concat_offsets_group_ids_and_merges_metrics():
    first, second = _batch(["a"], 2, [0, 1]), _batch(["b", "c"], 2, [1, 1, 0, 0])
    merged = concat_batches([first, second])
    assert merged.records == ["a", "b", "c"]  # type: ignore[comparison-overlap]  # strings stand in
    assert merged.group_ids.tolist() == [0, 0, 1, 1, 2, 2]
    assert merged.rewards.tolist() == [0, 1, 1, 1, 0, 0]
    assert [c["task"] for c in merged.components] == [0, 1, 1, 1, 0, 0]
    assert merged.advantages.shape == (6, 3)
    # reward/mean over all 6 rows: (0.5 * 2 + 0.5 * 4) / 6; seconds (declared summed) add up
    assert merged.metrics == {"reward/mean": pytest.approx(0.5), "reward/seconds": summed(2.0)}
    assert merge_metrics([({"a/mean": 1.0}, 1), ({"a/mean": 0.0, "b": 2.0}, 3)]) == {
        "a/mean": 0.25,
        "b": 2.0,
    }


def test_epochs_count_draws_of_several_batches():
    from videorl.api import resolve_config_path
    from videorl.trainer.build import steps_from_epochs

    dapo = load_config(resolve_config_path("dapo"))  # 1 epoch, 3 sampler batches per draw
    assert steps_from_epochs(dapo, 9).trainer.steps == 3  # DAPO: len(dataloader) in gen batches
    assert steps_from_epochs(dapo, 2).trainer.steps == 1
