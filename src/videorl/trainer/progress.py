"""Training progress: a rich bar on a terminal, one plain line per step in a batch-job log.

When stdout is not a terminal (nohup, sbatch, `> train.log`), every `log_every` steps (and
the last) print one line that a log reader can grep:

    step 12/200  reward 0.262  loss 0.0131  tok/s 812  s/step 0.74  ETA 2m19s

`s/step` is the step's own time (`perf/step_s`) when the metrics carry it; ETA is the mean
wall time of the steps run so far (validation and checkpoints included) times the steps
left. `step_line` is the formatter (the SFT loop reuses it).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any, Self

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn


def _duration(seconds: float) -> str:
    """`45s`, `2m19s`, `3h05m`."""
    if not math.isfinite(seconds):
        return "?"
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def _number(metrics: Mapping[str, Any], key: str) -> float:
    value = metrics.get(key)
    return float(value) if isinstance(value, int | float) and value is not None else math.nan


def step_line(
    step: int,
    total: int,
    metrics: Mapping[str, Any],
    *,
    mean_step_s: float,
    reward_key: str = "reward/mean",
    loss_key: str = "actor/loss",
) -> str:
    """One log line: step/total, reward and loss (each when the step has it: SFT's reward is
    its validation's), tokens/s, seconds per step, ETA."""
    step_s = _number(metrics, "perf/step_s")
    step_s = mean_step_s if math.isnan(step_s) else step_s
    return (
        f"step {step}/{total}  {status_text(metrics, reward_key, loss_key)}"
        f"tok/s {_number(metrics, 'perf/tokens_per_s'):.0f}  s/step {step_s:.2f}  "
        f"ETA {_duration(mean_step_s * (total - step))}"
    )


def status_text(
    metrics: Mapping[str, Any], reward_key: str = "reward/mean", loss_key: str = "actor/loss"
) -> str:
    """The bar's status field: reward and loss, each when `metrics` has it (two spaces after)."""
    fields = (("reward", reward_key, ".3f"), ("loss", loss_key, ".4f"))
    return "".join(
        f"{label} {value:{spec}}  "
        for label, key, spec in fields
        if not math.isnan(value := _number(metrics, key))
    )


class StepProgress:
    """`with StepProgress(...) as progress: progress.update(step, metrics)` per step."""

    def __init__(
        self,
        console: Console,
        total: int,
        start: int = 0,
        *,
        log_every: int = 1,
        enabled: bool = True,
        reward_key: str = "reward/mean",
        loss_key: str = "actor/loss",
    ) -> None:
        self.console = console
        self.keys = {"reward_key": reward_key, "loss_key": loss_key}
        self.total = total
        self.start = start
        self.log_every = max(1, log_every)
        self.enabled = enabled
        self.plain = not console.is_terminal
        self._began = time.monotonic()
        self._bar: Progress | None = None
        self._task: Any = None

    def __enter__(self) -> Self:
        self._began = time.monotonic()
        if self.enabled and not self.plain:
            self._bar = Progress(
                TextColumn("step {task.completed}/{task.total}"),
                BarColumn(),
                TimeRemainingColumn(),
                TextColumn("{task.fields[status]}"),
                console=self.console,
                transient=False,
            )
            self._bar.__enter__()
            self._task = self._bar.add_task(
                "train", total=self.total, completed=self.start, status=""
            )
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)

    def update(self, step: int, metrics: Mapping[str, Any]) -> None:
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.update(self._task, completed=step, status=status_text(metrics, **self.keys))
            return
        if step % self.log_every and step != self.total:
            return
        mean = (time.monotonic() - self._began) / max(1, step - self.start)
        self.console.print(
            step_line(step, self.total, metrics, mean_step_s=mean, **self.keys),
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        self.console.file.flush()
