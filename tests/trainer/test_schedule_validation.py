"""What a run writes: the learning rate of every step (warm-up, cosine, constant) equals the
formula, validation writes `val/*` metrics and `best/` follows the configured metric, and
the loop's optional paths (KL to a reference model, the scoring pool, TensorBoard) run."""

from __future__ import annotations

import math

import pytest
import torch

from tests.trainer.runs import REFERENCE, metrics_by_step
from videorl.config import TrainerConfig
from videorl.errors import ConfigError
from videorl.models.loading import load_model
from videorl.rewards.pool import ScoringPool
from videorl.trainer.loop import LoopHooks, run_training

LR = 1e-2  # tests/trainer/conftest.py SMALL


def test_warmup_then_cosine_lr_per_step(reference_run):
    """warm-up 2, cosine to 0.1 over 4 steps. Step k (from 1) uses factor(k - 1):
    factor(s) = (s + 1) / (warmup + 1) while s < warmup, then
    min + (1 - min) * (1 + cos(pi * (s - warmup) / (steps - warmup))) / 2."""
    _, out = reference_run
    rows = metrics_by_step(out)
    cosine = [0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * p)) for p in (0.0, 0.5)]
    expected = [LR * 1 / 3, LR * 2 / 3, LR * cosine[0], LR * cosine[1]]
    assert [rows[k]["lr"] for k in (1, 2, 3, 4)] == pytest.approx(expected, rel=1e-9)


def test_validation_runs_every_val_every_steps(reference_run):
    _, out = reference_run
    rows = metrics_by_step(out)
    validated = sorted(k for k, row in rows.items() if "val/reward_mean_at_k" in row)
    assert validated == [2, 4]
    for k in validated:
        row = rows[k]
        assert 0.0 <= row["val/reward_mean_at_k"] <= row["val/reward_best_at_k"] <= 1.0
        assert row["val/tg/mean_at_k"] == row["val/reward_mean_at_k"]  # one family
    assert (out / "best" / "model.safetensors").is_file()


def test_validation_leaves_training_as_it_was(reference_run, build_config, tmp_path):
    """Validation samples on random streams of its own: the reference run (validation every
    2 steps, sampled) trains exactly as the same run without validation."""
    _, out = reference_run
    config, _ = build_config("grpo", tmp_path / "run", *REFERENCE, "trainer.val_every=0")
    run_training(config)

    def training(row: dict) -> dict:
        timing = ("val/", "time/", "perf/")
        return {k: v for k, v in row.items() if not k.startswith(timing) and "seconds" not in k}

    with_val, without = metrics_by_step(out), metrics_by_step(tmp_path / "run")
    assert [training(with_val[k]) for k in (1, 2, 3, 4)] == [
        training(without[k]) for k in (1, 2, 3, 4)
    ]
    ours = load_model(str(out / "final")).model.state_dict()
    theirs = load_model(str(tmp_path / "run" / "final")).model.state_dict()
    assert all(torch.equal(ours[k], theirs[k]) for k in ours)


def test_tensorboard_events_hold_the_step_scalars(reference_run):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    _, out = reference_run
    events = EventAccumulator(str(out / "tensorboard"))
    events.Reload()
    tags = events.Tags()["scalars"]
    assert {"reward/mean", "actor/loss", "lr", "val/reward_mean_at_k"} <= set(tags)
    lr = {e.step: e.value for e in events.Scalars("lr")}
    rows = metrics_by_step(out)
    assert lr == {k: pytest.approx(rows[k]["lr"], rel=1e-6) for k in (1, 2, 3, 4)}


# One 3-step run for the rest: constant LR after a 1-step warm-up, validation every step
# with scripted results, best/ chosen by a non-default metric, KL to a reference model,
# rewards scored by a pool of 2 worker processes.
VALIDATIONS = [  # (default metric, configured metric) at steps 1, 2, 3
    {"val/reward_mean_at_k": 0.9, "val/tg/best_at_k": 0.3},
    {"val/reward_mean_at_k": 0.1, "val/tg/best_at_k": 0.5},
    {"val/reward_mean_at_k": 0.95, "val/tg/best_at_k": 0.4},  # worse: must not replace best/
]


@pytest.fixture(scope="module")
def paths_run(build_config, teacher_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("paths") / "run"
    config, _ = build_config(
        "grpo",
        out,
        "trainer.steps=3",
        "trainer.save_every=1",
        "trainer.keep_last=5",
        "trainer.val_every=1",
        "trainer.best_metric=val/tg/best_at_k",
        "optim.schedule=constant",
        "optim.warmup_steps=1",
        f"model.reference_path={teacher_dir()}",
        "algorithm.loss.kl_coef=0.1",
        "reward.num_workers=2",
    )
    seen = {"validate": 0, "pool": 0}
    real_score = ScoringPool.score

    def scripted_validate(state):
        seen["validate"] += 1
        return dict(VALIDATIONS[state.step - 1])

    def counting_score(self, *args, **kwargs):
        seen["pool"] += 1
        return real_score(self, *args, **kwargs)

    with pytest.MonkeyPatch.context() as m:
        m.setattr(ScoringPool, "score", counting_score)
        run_training(config, hooks=LoopHooks(validate=scripted_validate))
    return out, seen


def test_warmup_then_constant_lr_per_step(paths_run):
    out, _ = paths_run
    rows = metrics_by_step(out)
    assert [rows[k]["lr"] for k in (1, 2, 3)] == pytest.approx([LR / 2, LR, LR], rel=1e-9)


def test_best_checkpoint_follows_the_configured_metric(paths_run):
    out, seen = paths_run
    assert seen["validate"] == 3
    rows = metrics_by_step(out)
    assert [rows[k].get("val/best_step") for k in (1, 2, 3)] == [1, 2, None]
    state = torch.load(out / "step-000003" / "state.pt", weights_only=False)
    assert state["best"] == {"step": 2, "value": 0.5, "metric": "val/tg/best_at_k"}
    best = load_model(out / "best").model.state_dict()
    at_step_2 = load_model(out / "step-000002" / "model").model.state_dict()
    at_step_3 = load_model(out / "step-000003" / "model").model.state_dict()
    assert all(torch.equal(best[k], at_step_2[k]) for k in at_step_2)
    assert any(not torch.equal(best[k], at_step_3[k]) for k in at_step_3)


def test_kl_to_the_reference_model_and_the_scoring_pool_run_in_the_loop(paths_run):
    out, seen = paths_run
    rows = metrics_by_step(out)
    assert seen["pool"] >= 3  # every step's rewards went through the worker pool
    for k in (1, 2, 3):
        assert rows[k]["actor/kl"] > 0  # the reference is another random model
        assert 0.0 < rows[k]["reward/mean"] <= 1.0


def test_validation_logs_the_video_gain_of_each_control(make_config, tmp_path):
    config, _ = make_config(
        "grpo",
        "trainer.steps=1",
        "trainer.val_every=1",
        "trainer.val_temperature=0",
        "trainer.val_controls=[frozen,blank]",
        output=tmp_path / "run",
    )
    run_training(config)
    row = metrics_by_step(tmp_path / "run")[1]
    for control in ("frozen", "blank"):
        on_control = row[f"val/control/{control}/mean_at_k"]
        assert 0.0 <= on_control <= 1.0
        assert row[f"val/video_gain/{control}"] == pytest.approx(
            row["val/reward_mean_at_k"] - on_control
        )


def test_an_unknown_validation_control_is_refused_at_load(make_config, tmp_path):
    with pytest.raises(ConfigError, match=r"trainer.val_controls\[0\]' = 'mirror' is not allowed"):
        make_config("grpo", "trainer.val_controls=[mirror]", output=tmp_path / "run")


def test_schedule_horizon_is_independent_of_the_run_length(make_config, tmp_path):
    """optim.schedule_steps = 65,000 and a 1,200-step run (T-GRPO as Video-R1 ran it): the
    rate at step 1,200 is 0.99916 lr, not the end of the cosine; null: trainer.steps."""
    from videorl.trainer.optim import lr_lambda

    extra = (
        "trainer.steps=1200",
        "optim.schedule=cosine",
        "optim.warmup_steps=0",
        "optim.min_lr_ratio=0",
    )
    long, _ = make_config("grpo", *extra, "optim.schedule_steps=65000", output=tmp_path / "a")
    short, _ = make_config("grpo", *extra, output=tmp_path / "b")
    assert lr_lambda(long)(1200) == pytest.approx(0.5 * (1 + math.cos(math.pi * 1200 / 65000)))
    assert lr_lambda(long)(1200) == pytest.approx(0.99916, abs=1e-5)
    assert lr_lambda(short)(1200) == pytest.approx(0.0)
    with pytest.raises(ConfigError, match="optim.schedule_steps=1 must be > optim.warmup_steps=2"):
        make_config("grpo", "optim.schedule_steps=1", "optim.warmup_steps=2", output=tmp_path / "c")


def test_validation_takes_the_whole_set_and_can_run_before_training(make_config, tmp_path):
    from videorl.config.plan import plan_step
    from videorl.data.loaders import load_records

    config, _ = make_config(
        "grpo",
        "trainer.steps=1",
        "trainer.val_every=1",
        "trainer.val_before_train=true",
        "trainer.val_temperature=0",
        "trainer.val_samples=1",
        "trainer.val_max_prompts=null",  # the default (the quickstart recipe caps it at 8)
        output=tmp_path / "run",
    )
    assert TrainerConfig().val_max_prompts is None
    assert (
        "all prompts x 1 samples, every 1 steps, and before training"
        in plan_step(config).validation
    )
    run_training(config)
    rows = metrics_by_step(tmp_path / "run")
    assert sorted(rows) == [0, 1] and "val/reward_mean_at_k" in rows[0]
    assert "actor/loss" not in rows[0]  # step 0 is the starting model, before any update
    assert len(load_records(config.data.val).records) == 2  # and validation saw both
