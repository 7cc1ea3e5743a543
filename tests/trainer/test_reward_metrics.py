"""`reward/*` metrics describe the policy rows only; annotation and constructed rows are
reported under `reward/annotation/*` and `reward/constructed/*`; the curves plot policy keys."""

from __future__ import annotations

import json

import pytest
import torch

from tests.factories import make_batch
from videorl.data.records import record_from_dict
from videorl.reduction import logged
from videorl.rewards import RewardConfig, serialize_annotation
from videorl.rollout.batch import RolloutBatch
from videorl.trainer.metrics import plot_reward_curves, rollout_metrics
from videorl.trainer.stages import score


def math_batch() -> RolloutBatch:
    """One math group: 2 wrong policy rows, 1 constructed row and 1 annotation row (right); one wrong row is well formatted."""
    record = record_from_dict(
        {"id": "m", "family": "math", "problem": "1+1?", "answer": {"text": "2"}}
    )
    right = serialize_annotation(record)
    texts = ["\\boxed{7}", "no answer", right, right]
    return make_batch(
        None,
        [0] * 4,
        records=[record],
        lengths=[3] * 4,
        annotation=[False, False, False, True],
        texts=texts,
        off_policy=torch.tensor([False, False, True, False]),
    )


def test_policy_metrics_exclude_annotation_and_constructed_rows():
    batch = score(math_batch(), RewardConfig(num_workers=1))
    metrics = logged({**batch.metrics, **rollout_metrics(batch, max_new_tokens=8)})
    assert batch.rewards.tolist() == [0.0, 0.0, 1.0, 1.0]
    assert metrics["reward/mean"] == 0.0
    assert metrics["reward/math/mean"] == 0.0
    assert metrics["reward/format_mean"] == pytest.approx(0.5)  # one of two policy rows boxed
    assert metrics["reward/samples"] == 2
    assert metrics["reward/annotation/mean"] == 1.0
    assert metrics["reward/annotation/math/mean"] == 1.0
    assert metrics["reward/annotation/samples"] == 1
    assert metrics["reward/constructed/mean"] == 1.0
    assert metrics["reward/constructed/math/mean"] == 1.0
    assert "reward/annotation/seconds" not in metrics and "reward/seconds" in metrics


def test_batches_without_annotation_rows_have_no_annotation_keys():
    batch = math_batch()
    plain = RolloutBatch(
        **{
            **batch.__dict__,
            "is_annotation": torch.zeros(4, dtype=torch.bool),
            "off_policy": torch.zeros(4, dtype=torch.bool),
        }
    )
    metrics = score(plain, RewardConfig(num_workers=1)).metrics
    assert metrics["reward/mean"] == pytest.approx(0.5)
    assert not any(k.startswith(("reward/annotation/", "reward/constructed/")) for k in metrics)


def test_reward_curves_plot_policy_keys_only(tmp_path, monkeypatch):
    rows = [
        {"step": 1, "reward/mean": 0.0, "reward/tg/mean": 0.1, "reward/annotation/mean": 1.0},
        {"step": 2, "reward/mean": 0.2, "reward/tg/mean": 0.3, "reward/constructed/mean": 0.9},
    ]
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    plotted: list[str] = []
    import matplotlib.axes

    original = matplotlib.axes.Axes.plot

    def spy(self, *args, label=None, **kwargs):
        plotted.append(label)
        return original(self, *args, label=label, **kwargs)

    monkeypatch.setattr(matplotlib.axes.Axes, "plot", spy)
    plot_reward_curves(path, tmp_path / "curves.png")
    assert plotted == ["reward/mean", "reward/tg/mean"]


def test_sft_curves_put_loss_and_validation_reward_on_their_own_axes():
    """SFT's loss (~6) and validation reward (0-1) once shared one axis labelled reward."""
    from videorl.trainer.metrics import reward_curves_figure

    rows = [
        {"step": 1, "sft/loss": 6.0},
        {"step": 2, "sft/loss": 5.5, "val/reward_mean_at_k": 0.4},
        {"step": 3, "sft/loss": 5.0, "val/reward_mean_at_k": 0.6},
    ]
    reward, loss = reward_curves_figure(rows, ("sft/loss",)).axes
    assert (reward.get_ylabel(), loss.get_ylabel()) == ("reward", "loss")
    assert [line.get_label() for line in reward.lines] == ["val mean@k"]
    assert [line.get_label() for line in loss.lines] == ["sft/loss"]
    assert reward.get_ylim() == (-0.05, 1.05)


def test_rl_curves_have_integer_steps_and_a_sane_axis_for_a_constant_zero():
    from videorl.trainer.metrics import reward_curves_figure

    rows = [{"step": s, "reward/mean": 0.0} for s in (1, 2, 3)]
    fig = reward_curves_figure(rows, ("reward/mean",))
    (ax,) = fig.axes
    fig.canvas.draw()
    assert ax.get_ylim() == (-0.05, 1.05)
    ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
    assert ticks and all(float(t).is_integer() for t in ticks)
