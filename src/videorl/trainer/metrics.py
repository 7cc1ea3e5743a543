"""A step's metrics: the sinks (JSONL always, TensorBoard and wandb when configured, the
reward-curve PNG) and what a step reports (stage times, rollout and row statistics)."""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from videorl.rewards.batch import ANNOTATION_PREFIX, CONSTRUCTED_PREFIX, POLICY_PREFIX
from videorl.rollout.batch import RolloutBatch
from videorl.trainer.stages import row_kinds

log = logging.getLogger(__name__)


class MetricsWriter:
    """Writes one JSON object per step to `metrics.jsonl` (flushed), and to TB/wandb."""

    def __init__(
        self,
        output_dir: str | Path,
        *,
        tensorboard: bool,
        wandb_project: str | None,
        config: dict[str, Any],
    ):
        self.dir = Path(output_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / "metrics.jsonl"
        self._file = self.path.open("a")
        self._tb = None
        self._wandb = None
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter

                self._tb = SummaryWriter(str(self.dir / "tensorboard"))
            except ImportError:
                log.warning("tensorboard is not installed; trainer.tensorboard=true is ignored")
        if wandb_project:
            import wandb

            self._wandb = wandb.init(project=wandb_project, config=config, dir=str(self.dir))

    def write(self, step: int, metrics: dict[str, Any]) -> None:
        """Scalars to every sink; a `samples` list (example rollouts) to samples.jsonl."""
        metrics = dict(metrics)
        samples = metrics.pop("samples", None)
        if samples:
            with (self.dir / "samples.jsonl").open("a") as f:
                f.write(json.dumps({"step": step, "samples": samples}) + "\n")
        clean = {
            k: (v if not isinstance(v, float) or math.isfinite(v) else None)
            for k, v in metrics.items()
        }
        self._file.write(json.dumps({"step": step, **clean}) + "\n")
        self._file.flush()
        numeric = {k: v for k, v in clean.items() if isinstance(v, (int, float)) and v is not None}
        if self._tb is not None:
            for key, value in numeric.items():
                self._tb.add_scalar(key, value, step)
        if self._wandb is not None:
            self._wandb.log(numeric, step=step)

    def close(self) -> None:
        self._file.close()
        if self._tb is not None:
            self._tb.close()
        if self._wandb is not None:
            self._wandb.finish()


def read_metrics(path: str | Path) -> list[dict[str, Any]]:
    """All rows of a metrics.jsonl; a resumed run's later rows win for repeated steps."""
    by_step: dict[int, dict[str, Any]] = {}
    for line in Path(path).read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            by_step[row["step"]] = {**by_step.get(row["step"], {}), **row}
    return [by_step[s] for s in sorted(by_step)]


VAL_KEY = "val/reward_mean_at_k"  # validation's mean reward, drawn with the training rewards


def plot_reward_curves(
    metrics_path: str | Path, out_png: str | Path, keys: tuple[str, ...] = ()
) -> Path:
    """PNG of the policy's reward (and per-family reward) per step, with validation points;
    annotation and constructed rows' `reward/annotation/*`, `reward/constructed/*` are left
    out (they describe the ground truth and forced prefixes, not the policy)."""
    rows = read_metrics(metrics_path)
    keys = keys or tuple(
        sorted(
            {
                k
                for r in rows
                for k in r
                if k == "reward/mean"
                or (
                    k.startswith("reward/")
                    and k.endswith("/mean")
                    and not k.startswith((ANNOTATION_PREFIX, CONSTRUCTED_PREFIX))
                )
            }
        )
    )
    reward_curves_figure(rows, keys).savefig(out_png, dpi=100)
    return Path(out_png)


def reward_curves_figure(rows: list[dict[str, Any]], keys: tuple[str, ...]) -> Any:
    """The curves of `keys` (and `val/reward_mean_at_k`) per step: losses (a key with
    `loss` in its name, e.g. SFT's `sft/loss`) on a panel of their own below the rewards,
    integer step ticks, and a reward axis of [0, 1] when the values lie in it (a constant
    0 is not blown up to a +-0.04 axis)."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    val = [(r["step"], r[VAL_KEY]) for r in rows if r.get(VAL_KEY) is not None]
    panels = {
        "reward": [k for k in keys if "loss" not in k],
        "loss": [k for k in keys if "loss" in k],
    }
    series = {
        name: [
            (key, [(r["step"], r[key]) for r in rows if r.get(key) is not None]) for key in names
        ]
        for name, names in panels.items()
    }
    if val:
        series["reward"].append(("val mean@k", val))
    shown = {name: [(k, p) for k, p in curves if p] for name, curves in series.items()}
    shown = {name: curves for name, curves in shown.items() if curves} or {"reward": []}
    fig = Figure(figsize=(7, 2.6 + 1.8 * len(shown)), layout="constrained")
    axes = fig.subplots(len(shown), 1, sharex=True, squeeze=False)[:, 0]
    for ax, (name, curves) in zip(axes, shown.items(), strict=True):
        for key, points in curves:
            short = len(points) < 50  # markers, so a curve of a few points (or one) still shows
            dashed = "--" if key == "val mean@k" else "-"
            marker = "o" if short or dashed == "--" else None
            ax.plot(*zip(*points, strict=True), dashed, label=key, marker=marker)
        values = [v for _, points in curves for _, v in points]
        if name == "reward" and values and min(values) >= -1e-9 and max(values) <= 1 + 1e-9:
            ax.set_ylim(-0.05, 1.05)
        elif values and max(values) - min(values) < 1e-9:
            ax.set_ylim(values[0] - 1, values[0] + 1)
        ax.set_ylabel(name)
        ax.grid(alpha=0.3)
        if curves:
            ax.legend(fontsize=8)
    axes[-1].set_xlabel("step")
    axes[-1].xaxis.set_major_locator(MaxNLocator(integer=True))
    return fig


class StageTimer:
    """Wall time per named stage of a step (`time/<stage>` metrics)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        yield
        self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start

    def metrics(self) -> dict[str, float]:
        return {f"time/{k}": v for k, v in self.seconds.items()}


def rollout_metrics(batch: RolloutBatch, max_new_tokens: int) -> dict[str, Any]:
    """Reward and length statistics of the policy rows, before selection; annotation and
    constructed rows' rewards (sensitivity bonus included) under their own prefixes."""
    kinds = row_kinds(batch)
    policy_rows, annotation = kinds[POLICY_PREFIX], batch.is_annotation
    rewards = batch.scored_rewards()
    metrics = {
        "reward/mean": float(rewards[policy_rows].mean()),
        "response/length_mean": float(batch.response_lengths[policy_rows].float().mean()),
        "response/truncated_frac": float(batch.truncated[policy_rows].float().mean()),
        "rollout/constructed_rows": float(batch.off_policy.sum()),
        "rollout/annotation_truncated": float(batch.truncated[annotation].sum()),
    }
    for prefix in (ANNOTATION_PREFIX, CONSTRUCTED_PREFIX):
        if kinds[prefix].any():
            metrics[f"{prefix}mean"] = float(rewards[kinds[prefix]].mean())
    if metrics["rollout/annotation_truncated"]:
        log.warning(
            "%d annotation rows were cut by rollout.max_new_tokens=%d and score below 1; raise it",
            int(metrics["rollout/annotation_truncated"]),
            max_new_tokens,
        )
    return metrics


def step_metrics(batch: RolloutBatch, rows_before: int, timer: StageTimer) -> dict[str, Any]:
    """The step's row counts, throughput, memory and first samples (after selection)."""
    tokens = float(batch.response_lengths.sum())
    total = sum(timer.seconds.values())
    return {
        **timer.metrics(),
        "rows/total": float(rows_before),
        "rows/kept": float(batch.num_rows),
        "rows/dropped": float(rows_before - batch.num_rows),
        "perf/tokens_per_s": tokens / max(total, 1e-9),
        "perf/step_s": total,
        "perf/peak_mem_gb": peak_memory_gb(),
        "samples": [
            {"id": batch.records[int(g)].id, "text": t, "reward": float(r)}
            for g, t, r in zip(
                batch.group_ids[:4], batch.texts[:4], batch.scored_rewards()[:4], strict=True
            )
        ],
    }


def peak_memory_gb() -> float:
    """Peak accelerator memory allocated, else the process's peak resident set (Linux KiB)."""
    if torch.cuda.is_available():
        return torch.cuda.max_memory_allocated() / 2**30
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
