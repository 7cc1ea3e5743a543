"""DAPO's and GSPO's recipe settings train 3 steps on the tiny model (configs/dapo.yaml and
configs/gspo.yaml shrunk to the test budget: 16 new tokens, 4 rows per prompt)."""

from __future__ import annotations

import pytest
import torch

from tests.trainer.runs import metrics_by_step
from videorl.models.loading import load_model
from videorl.trainer.loop import run_training

# configs/dapo.yaml's algorithm and reward keys; the 4096-token buffer of a 20480 budget
# becomes 8 of 16, and the Video-R1 length band (not in DAPO) rides along to test both terms.
DAPO = [
    "trainer.steps=3",
    "algorithm.loss.clip_low=0.2",
    "algorithm.loss.clip_high=0.28",
    "algorithm.loss.dual_clip=10.0",
    "algorithm.loss.aggregation=token-mean",
    "reward.overlong.enabled=true",
    "reward.overlong.buffer_len=8",
    "reward.length_band.enabled=true",
    "reward.length_band.min=4",
    "reward.length_band.max=16",
]
# configs/gspo.yaml's loss (published clip range and aggregation by default); two
# mini-batches, so the second one's sequence ratios move away from 1 and the clip binds.
GSPO = ["trainer.steps=3", "algorithm.loss.name=gspo", "optim.mini_batches=2"]


@pytest.fixture(scope="module")
def runs(build_config, tmp_path_factory):
    out = {}
    for name, overrides in (("dapo", DAPO), ("gspo", GSPO)):
        folder = tmp_path_factory.mktemp(name) / "run"
        config, _ = build_config("grpo", folder, *overrides)
        before = {k: v.clone() for k, v in load_model(config.model.path).model.state_dict().items()}
        final = run_training(config)
        after = load_model(final).model.state_dict()
        changed = any(not torch.equal(before[k], after[k]) for k in before if "visual" not in k)
        out[name] = (config, metrics_by_step(folder), changed)
    return out


def test_dapo_settings_train_with_both_length_terms(runs):
    config, rows, changed = runs["dapo"]
    assert changed and sorted(rows) == [1, 2, 3]
    assert config.algorithm.loss.clip_high == 0.28 and config.reward.overlong.buffer_len == 8
    for row in rows.values():
        penalty, bonus = row["reward/overlong_penalty_mean"], row["reward/length_bonus_frac"]
        assert -1.0 <= penalty <= 0.0 and 0.0 <= bonus <= 1.0
        # the step's reward is the verifier's plus both terms (every row is a policy row)
        expected = row["reward/tg/mean"] + penalty + 0.2 * bonus
        assert row["reward/mean"] == pytest.approx(expected, abs=1e-5)
    assert any(row["reward/overlong_penalty_mean"] < 0 for row in rows.values())
    assert any(row["reward/length_bonus_frac"] > 0 for row in rows.values())


def test_gspo_settings_train_and_clip_whole_sequences(runs):
    config, rows, changed = runs["gspo"]
    assert changed and sorted(rows) == [1, 2, 3]
    loss = config.algorithm.loss
    assert (loss.name, loss.clip_low, loss.clip_high) == ("gspo", 3e-4, 4e-4)
    assert loss.aggregation == "seq-mean-token-mean"
    assert all("reward/overlong_penalty_mean" not in row for row in rows.values())
    assert any(row["actor/clip_frac"] > 0 for row in rows.values())
    assert all(row["actor/dual_clip_frac"] == 0 for row in rows.values())
