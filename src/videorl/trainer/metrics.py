"""Metric sinks: JSONL always, TensorBoard and wandb when configured, and the reward-curve PNG."""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any

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
            ax.plot(*zip(*points), label=key, marker="o" if short else None, markersize=7)
    val = [
        (r["step"], r["val/reward_mean_at_k"])
        for r in rows
        if r.get("val/reward_mean_at_k") is not None
    ]
    if val:
        ax.plot(*zip(*val), "o--", label="val mean@k")
    ax.set_xlabel("step")
    ax.set_ylabel("reward")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out_png, dpi=100)
    plt.close(fig)
    return Path(out_png)
