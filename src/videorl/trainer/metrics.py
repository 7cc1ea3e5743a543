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


def plot_reward_curves(
    metrics_path: str | Path, out_png: str | Path, keys: tuple[str, ...] = ()
) -> Path:
    """PNG of the policy's reward (and per-family reward) per step, with validation points;
    annotation and constructed rows' `reward/annotation/*`, `reward/constructed/*` are left
    out (they describe the ground truth and forced prefixes, not the policy)."""
    import matplotlib

    from videorl.rewards.batch import ANNOTATION_PREFIX, CONSTRUCTED_PREFIX

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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
    fig, ax = plt.subplots(figsize=(7, 4))
    for key in keys:
        points = [(r["step"], r[key]) for r in rows if r.get(key) is not None]
        if points:
            short = len(points) < 50  # markers, so a curve of a few points (or one) still shows
            ax.plot(
                *zip(*points, strict=True), label=key, marker="o" if short else None, markersize=7
            )
    val = [
        (r["step"], r["val/reward_mean_at_k"])
        for r in rows
        if r.get("val/reward_mean_at_k") is not None
    ]
    if val:
        ax.plot(*zip(*val, strict=True), "o--", label="val mean@k")
    ax.set_xlabel("step")
    ax.set_ylabel("reward")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out_png, dpi=100)
    plt.close(fig)
    return Path(out_png)


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
