"""Direct unit tests of the step's pieces: stages, group building, `RolloutBatch`, the
distributed helpers, and the update under gradient checkpointing and bf16 autocast."""

from __future__ import annotations

import random
import types
from typing import cast

import pytest
import torch

from tests.factories import make_batch
from tests.trainer.dist_update_worker import fixed_batch
from videorl import distributed
from videorl.algorithms.loss import PolicyLossConfig
from videorl.algorithms.selection import PruningConfig
from videorl.config import AlgorithmConfig, ConstructedConfig, OptimConfig
from videorl.data.families import Family
from videorl.data.records import DenseCaption, TaskRecord, TemporalAnswer
from videorl.distributed import DistInfo, reduce_metrics, shard_indices
from videorl.models.generate import Generation, SamplingParams
from videorl.models.loading import load_model
from videorl.reduction import summed
from videorl.rollout.batch import RolloutBatch, pad_rows
from videorl.rollout.groups import add_annotation_rows, constructed_prefix, generate_groups
from videorl.trainer import stages
from videorl.trainer import update as update_module
from videorl.trainer.state import BestStep
from videorl.trainer.update import UpdateContext, update_policy


def _record(i: int = 0, captions=()) -> TaskRecord:
    return TaskRecord(
        id=f"r{i}",
        family=Family("temporal_grounding"),
        problem=f"the event {i}",
        answer=TemporalAnswer(((1.0, 2.5),)),
        duration=4.0,
        captions=captions,
    )


def _batch(rewards, groups, lengths=None, annotation=None) -> RolloutBatch:
    records = [_record(g) for g in range(max(groups) + 1)]
    return make_batch(rewards, groups, records=records, lengths=lengths, annotation=annotation)


# ----- stages ---------------------------------------------------------------------------


def test_compute_advantages_broadcasts_grpo_over_each_rows_tokens():
    """docs/methods.md#advantage-estimators: rewards [1, 0, 0, 1] -> grpo
    [0.866, -0.866, -0.866, 0.866]; zero on padding."""
    batch = _batch([1.0, 0.0, 0.0, 1.0], [0, 0, 0, 0], lengths=[1, 2, 3, 2])
    out = stages.compute_advantages(batch, AlgorithmConfig(estimator="grpo"))
    a = 0.8660254
    expected = torch.tensor([[a, 0, 0], [-a, -a, 0], [-a, -a, -a], [a, a, 0]])
    torch.testing.assert_close(out.advantages, expected, atol=1e-5, rtol=0)


def test_compute_advantages_masks_constructed_rows_negative_advantages():
    batch = _batch([1.0, 0.0, 0.0, 1.0], [0, 0, 0, 0])
    from dataclasses import replace

    batch = replace(batch, off_policy=torch.tensor([False, True, False, True]))
    config = AlgorithmConfig(estimator="grpo", constructed=ConstructedConfig(enabled=True))
    out = stages.compute_advantages(batch, config)
    a = 0.8660254
    torch.testing.assert_close(
        cast(torch.Tensor, out.advantages)[:, 0], torch.tensor([a, 0.0, -a, a]), atol=1e-5, rtol=0
    )


def test_score_turns_non_finite_rewards_into_zero(monkeypatch):
    from videorl.rewards.result import RewardResult

    overall = [float("nan"), 0.5, float("inf")]
    errors = [None, None, "crash: the worker died"]
    scores = types.SimpleNamespace(
        overall=overall,
        results=[RewardResult(o, {"task": 0.5}, e) for o, e in zip(overall, errors, strict=True)],
        metrics={"reward/seconds": summed(0.1)},
        seconds=0.1,
    )
    monkeypatch.setattr(stages, "score_batch", lambda *a, **k: scores)
    out = stages.score(_batch([0.0] * 3, [0, 0, 0]), config=None)  # type: ignore[arg-type]  # the stub stage reads no config
    assert out.rewards.tolist() == [0.0, 0.5, 0.0]
    assert out.components == [{"task": 0.5}] * 3
    assert out.metrics["reward/failed_crash"] == summed(1.0)


def test_select_keeps_every_row_without_pruning_and_drops_rows_with_it():
    batch = _batch(
        [1.0, 0.0, 0.5, 0.2, 1.0],
        [0, 0, 0, 0, 0],
        annotation=[False, False, False, False, True],
    )
    config = AlgorithmConfig(estimator="orarl", annotation_rows=True)
    scored = stages.compute_advantages(batch, config)
    kept = stages.select(scored, PruningConfig(), n=4)  # pruning off
    assert kept.num_rows == 5
    pruning = PruningConfig(enabled=True, prune_ratio=0.25, pos_quota=1, neg_quota=1)
    pruned = stages.select(scored, pruning, n=4)
    # keep 3 of 5: the annotation, the best positive (row 0) and the worst negative (row 1)
    assert pruned.num_rows == 3
    assert pruned.is_annotation.tolist() == [False, False, True]
    assert pruned.rewards.tolist() == [1.0, 0.0, 1.0]
    assert pruned.advantages[0, 0] > 0 > pruned.advantages[1, 0]  # type: ignore[index]  # set by compute_advantages
    assert pruned.advantages[2, 0] > 0  # type: ignore[index]  # set by compute_advantages; the annotation row


# ----- group building -------------------------------------------------------------------


def test_constructed_prefix_is_an_order_preserving_subset_of_the_captions():
    captions = tuple(DenseCaption(float(i), i + 0.5, f"caption {i}") for i in range(5))
    record = _record(captions=captions)
    for seed in range(20):
        text = constructed_prefix(record, random.Random(seed))
        assert text.startswith("<think>\nI need to find the specific moment the event 0.\n")
        lines = text.splitlines()[2:]
        assert 1 <= len(lines) <= 5
        chosen = [int(line.rsplit(" ", 1)[1]) for line in lines]
        assert chosen == sorted(set(chosen))
        # TaRO's caption form (rollout/groups.py): `From 0.0s to 5.2s, caption`
        assert lines[0] == f"From {chosen[0]:.1f}s to {chosen[0] + 0.5:.1f}s, caption {chosen[0]}"
    assert constructed_prefix(_record(), random.Random(0)).count("\n") == 2  # no captions


class _FakeTokenizer:
    def encode(self, text, add_special_tokens=False):
        return [ord(c) % 50 + 10 for c in text]

    def batch_decode(self, rows, skip_special_tokens=True):
        return ["".join(chr(int(t)) for t in row) for row in rows]


class _FakeEngine:
    """Policy rows are [p, j]; a continued prefix row is the prefix then [99]."""

    def generate(self, prompts, params):
        return [
            Generation([torch.tensor([p, j]) for j in range(params.n)], [], [False] * params.n)
            for p in range(len(prompts))
        ]

    def continue_prefixes(self, prompts, prefixes, params):
        return [Generation([torch.cat([x, torch.tensor([99])])], [], [True]) for x in prefixes]


def test_generate_groups_replaces_constructed_rows_and_flags_them():
    # only records with dense captions get constructed rows (TaRO); others sample normally
    captions = (DenseCaption(0.0, 1.0, "a person opens the door"),)
    records = [_record(0, captions), _record(1, captions)]
    constructed = torch.tensor([[False, True, False], [True, False, False]])
    batch = generate_groups(
        _FakeEngine(),  # type: ignore[arg-type]  # a stand-in engine
        records,
        ["p0", "p1"],  # type: ignore[list-item]  # strings stand in: the fake engine echoes them
        [None, None],
        SamplingParams(n=3),
        _FakeTokenizer(),
        constructed=constructed,
        rng=random.Random(0),
    )
    assert batch.group_ids.tolist() == [0, 0, 0, 1, 1, 1]
    assert batch.off_policy.tolist() == [False, True, False, True, False, False]
    assert batch.truncated.tolist() == [False, True, False, True, False, False]
    assert batch.responses[0].tolist() == [0, 0] and batch.responses[4].tolist() == [1, 1]
    assert int(batch.responses[1][-1]) == 99 and int(batch.responses[3][-1]) == 99


def test_add_annotation_rows_appends_one_flagged_row_per_group():
    batch = _batch([0.0] * 4, [0, 0, 1, 1])
    eos = 7
    out = add_annotation_rows(batch, _FakeTokenizer(), eos, budget=64)
    assert out.num_rows == 6
    assert out.group_ids.tolist() == [0, 0, 1, 1, 0, 1]
    assert out.is_annotation.tolist() == [False] * 4 + [True, True]
    assert all(int(r[-1]) == eos for r in out.responses[4:])
    assert out.truncated[4:].tolist() == [False, False]
    cut = add_annotation_rows(batch, _FakeTokenizer(), eos, budget=5)  # no room for EOS
    assert all(r.numel() == 5 for r in cut.responses[4:]) and cut.truncated[4:].all()


# ----- RolloutBatch ---------------------------------------------------------------------


def test_rollout_batch_subset_masks_and_padding():
    batch = _batch([0.1, 0.2, 0.3], [0, 0, 1], lengths=[1, 3, 2])
    from dataclasses import replace

    batch = replace(batch, advantages=torch.arange(9.0).view(3, 3))
    assert batch.response_mask().tolist() == [[1, 0, 0], [1, 1, 1], [1, 1, 0]]
    sub = batch.subset(torch.tensor([2, 0]))
    assert sub.group_ids.tolist() == [1, 0]
    assert sub.rewards.tolist() == pytest.approx([0.3, 0.1])
    assert sub.advantages.tolist() == [[6.0, 7.0], [0.0, 1.0]]  # cut to the longest kept row
    assert sub.records is batch.records  # per-prompt data is shared
    assert pad_rows([torch.ones(2), torch.ones(4)], 3, value=-1).tolist() == [
        [1, 1, -1],
        [1, 1, 1],
    ]
    empty = make_batch()
    assert empty.num_rows == 0 and empty.max_response_len == 0


# ----- distributed helpers --------------------------------------------------------------


def test_shard_indices_gives_each_rank_a_distinct_contiguous_share():
    indices = [5, 3, 8, 1, 9, 2]
    shares = [shard_indices(indices, DistInfo(rank=r, world_size=3)) for r in range(3)]
    assert shares == [[5, 3], [8, 1], [9, 2]]
    assert shard_indices(indices, DistInfo()) == indices


def test_reduce_metrics_means_numbers_and_concatenates_lists(monkeypatch):
    per_rank = [
        {"loss": 1.0, "ids": ["a"], "only0": 4.0, "none": None},
        {"loss": 3.0, "ids": ["b"], "none": None},
    ]

    def fake_gather(out, obj):
        out[:] = per_rank

    monkeypatch.setattr(distributed.dist, "all_gather_object", fake_gather)
    merged = reduce_metrics(per_rank[0], DistInfo(rank=0, world_size=2))
    assert merged == {"loss": 2.0, "ids": ["a", "b"], "only0": 4.0}
    assert reduce_metrics({"x": 1}, DistInfo()) == {"x": 1}


# ----- the update under gradient checkpointing and bf16 autocast ------------------------


def _update(model_dir, **ctx_kwargs):
    torch.manual_seed(0)
    loaded = load_model(model_dir)
    if ctx_kwargs.pop("checkpointing", False):
        loaded.model.gradient_checkpointing_enable()  # type: ignore[operator]  # nn.Module types attributes as Tensor | Module
        assert loaded.model.is_gradient_checkpointing
    ctx = UpdateContext(
        policy=loaded,
        optimizer=torch.optim.SGD(loaded.model.parameters(), lr=1.0),
        optim=OptimConfig(lr=1.0, grad_clip=1e9),
        loss=PolicyLossConfig(),
        temperature=1.0,
        **ctx_kwargs,
    )
    metrics = update_policy(ctx, fixed_batch(loaded))
    return metrics, loaded.model.state_dict()


def test_gradient_checkpointing_gives_the_same_update(tiny_model_dir):
    """SGD at lr 1 makes the weight change equal the gradient, compared exactly-ish."""
    model = tiny_model_dir("qwen2_5_vl")
    plain, plain_weights = _update(model)
    checkpointed, weights = _update(model, checkpointing=True)
    assert checkpointed["actor/loss"] == pytest.approx(plain["actor/loss"], abs=1e-6)
    assert checkpointed["actor/grad_norm"] == pytest.approx(plain["actor/grad_norm"], rel=1e-5)
    for key, value in plain_weights.items():
        torch.testing.assert_close(weights[key], value, atol=1e-5, rtol=0, msg=key)


def test_bf16_autocast_update_runs_on_cpu(tiny_model_dir, monkeypatch):
    seen = []
    real = update_module.rows_logprobs

    def spy(*args, **kwargs):
        seen.append((torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu")))
        return real(*args, **kwargs)

    monkeypatch.setattr(update_module, "rows_logprobs", spy)
    model = tiny_model_dir("qwen2_5_vl")
    plain, _ = _update(model)
    seen.clear()
    metrics, _ = _update(model, autocast_dtype=torch.bfloat16)
    assert seen and all(enabled and dtype == torch.bfloat16 for enabled, dtype in seen)
    assert metrics["actor/skipped_nonfinite_steps"] == 0
    assert metrics["actor/grad_norm"] == pytest.approx(plain["actor/grad_norm"], rel=0.1)


# ----- the best validation record ---------------------------------------------------------


def test_best_step_reads_the_checkpoint_mapping_every_version_wrote():
    saved = {"step": 2, "value": 0.5, "metric": "val/tg/best_at_k"}  # state.pt's `best`
    best = BestStep.from_dict(saved)
    assert best == BestStep(step=2, value=0.5, metric="val/tg/best_at_k")
    assert best.to_dict() == saved  # written back in the same form
    assert BestStep.from_dict({}) is None and BestStep.from_dict(None) is None  # none yet
