"""Report figures (matplotlib, Agg canvas; no display needed).

- `recall_curve.png`: for each family with an IoU per sample (its `sample_metric`: TG tIoU,
  SG box IoU, SEG J, TRK AO, STG tIoU), the percentage of samples with IoU >= m for m from 0 to 1 (R1@m for TG).
- `iou_histogram.png`: the distribution of those per-sample IoUs, one panel per family.
- `tg_timelines.png`: for up to 12 temporal grounding queries (a fixed, seeded sample), the
  ground-truth windows and the predicted window on each video's time axis.
- `controls.png` (with `--controls`): each family's metrics on the real media and on each
  control, side by side, each bar labelled with its value (a panel whose scores are all 0
  says so).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from videorl.data.families import Family, families
from videorl.eval.controls import by_family
from videorl.eval.scoring import FAMILY_EVALS, SampleResult

if TYPE_CHECKING:
    from matplotlib.figure import Figure

IOU_NAMES = {"iou": "IoU", "ao": "frame IoU (AO)", "tiou": "tIoU", "j": "mask IoU (J)"}
TIMELINE_QUERIES = 12
CURVE_POINTS = 101


def _figure(width: float, height: float) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=100, layout="constrained")


def _ious(results: Sequence[SampleResult]) -> dict[Family, list[float]]:
    """The per-sample IoU of each family that has one (its module's `sample_metric`)."""
    out: dict[Family, list[float]] = {}
    for family in families():
        key = FAMILY_EVALS[family].sample_metric
        values = [r.values[key] for r in results if r.family == family and key]
        if values:
            out[family] = values
    return out


def recall_curve(ious: dict[Family, list[float]], path: Path) -> Path:
    """`100 * #{IoU >= m} / N` against m in [0, 1], one line per family."""
    fig = _figure(5.5, 4.0)
    ax = fig.subplots()
    thresholds = [i / (CURVE_POINTS - 1) for i in range(CURVE_POINTS)]
    for family, values in ious.items():
        recall = [100.0 * sum(v >= t for v in values) / len(values) for t in thresholds]
        ax.plot(thresholds, recall, label=f"{family.short} (n={len(values)})")
    for mark in (0.3, 0.5, 0.7):
        ax.axvline(mark, color="0.85", linewidth=0.8, zorder=0)
    ax.set(
        xlabel="IoU threshold m",
        ylabel="% of samples with IoU >= m",
        xlim=(0, 1),
        ylim=(0, 100),
        title="Recall at IoU",
    )
    ax.legend()
    fig.savefig(path)
    return path


def iou_histogram(ious: dict[Family, list[float]], path: Path) -> Path:
    """Per-sample IoU in 20 bins of 0.05, one panel per family."""
    fig = _figure(4.0 * len(ious), 3.2)
    axes = fig.subplots(1, len(ious), squeeze=False)[0]
    for ax, (family, values) in zip(axes, ious.items(), strict=True):
        ax.hist(values, bins=[i / 20 for i in range(21)], color="tab:blue", edgecolor="white")
        name = IOU_NAMES[FAMILY_EVALS[family].sample_metric or ""]
        ax.set(
            xlabel=name, ylabel="samples", xlim=(0, 1), title=f"{family.short}: {name} per sample"
        )
    fig.savefig(path)
    return path


def timelines(
    results: Sequence[SampleResult], path: Path, k: int = TIMELINE_QUERIES, seed: int = 0
) -> Path:
    """Ground-truth windows and the predicted window of up to `k` seeded TG queries."""
    queries = [r for r in results if r.family.task.time_windows]
    chosen = sorted(random.Random(seed).sample(queries, min(k, len(queries))), key=lambda r: r.id)
    fig = _figure(7.5, 0.5 * len(chosen) + 1.2)
    ax = fig.subplots()
    for row, result in enumerate(chosen):
        windows = (result.ground_truth or {}).get("windows", [])
        ends = [e for _, e in windows] + ([result.prediction[1]] if result.prediction else [])
        length = result.duration or max(ends, default=1.0)
        ax.broken_barh([(0, length)], (row - 0.4, 0.8), color="0.92")
        ax.broken_barh([(s, e - s) for s, e in windows], (row - 0.4, 0.35), color="tab:green")
        if result.prediction:
            start, end = result.prediction
            ax.broken_barh([(start, end - start)], (row + 0.05, 0.35), color="tab:red")
        label = f" {result.values['iou']:.2f}" if result.prediction else f" {result.status}"
        ax.text(max([length, *ends]), row, label, va="center", fontsize=8)
    ax.set_yticks(range(len(chosen)), [r.id for r in chosen], fontsize=8)
    ax.set(
        xlabel="seconds",
        title="TG: ground truth (green, top) vs prediction (red, bottom); tIoU at right",
    )
    ax.invert_yaxis()
    fig.savefig(path)
    return path


def write_plots(results: Sequence[SampleResult], out_dir: Path) -> dict[str, Path]:
    """The PNGs that apply to the families present, by name."""
    out_dir.mkdir(parents=True, exist_ok=True)
    ious = _ious(results)
    plots: dict[str, Path] = {}
    if ious:
        plots["Recall at IoU"] = recall_curve(ious, out_dir / "recall_curve.png")
        plots["IoU histogram"] = iou_histogram(ious, out_dir / "iou_histogram.png")
    if any(family.task.time_windows for family in ious):
        plots["Temporal grounding timelines"] = timelines(results, out_dir / "tg_timelines.png")
    return plots


def controls_chart(controls: dict[str, Any], path: Path) -> Path:
    """Grouped bars per family: every metric on the real media, then on each control, each
    bar labelled with its value; a family whose every score is 0 says so on its panel."""
    controls_figure(controls).savefig(path)
    return path


def controls_figure(controls: dict[str, Any]) -> Figure:
    """The figure of `controls_chart`."""
    grouped = by_family(controls)
    fig = _figure(max(4.5, 3.0 * len(grouped)), 3.4)
    axes = fig.subplots(1, len(grouped), squeeze=False)[0]
    for ax, (family, present) in zip(axes, grouped.items(), strict=True):
        real = next(iter(present.values()))["real"][family]
        metrics = list(real)
        series = {"real": real, **{c: e["families"][family] for c, e in present.items()}}
        width = 0.8 / len(series)
        for k, (name, values) in enumerate(series.items()):
            xs = [i + (k - (len(series) - 1) / 2) * width for i in range(len(metrics))]
            bars = ax.bar(xs, [values.get(m, 0.0) for m in metrics], width, label=name)
            ax.bar_label(bars, fmt="%.1f", fontsize=6, padding=1)
        if not any(v.get(m, 0.0) for v in series.values() for m in metrics):
            ax.text(0.5, 0.55, "every score is 0", transform=ax.transAxes, ha="center")
        ax.set_xticks(range(len(metrics)), metrics, fontsize=8, rotation=30)
        ax.set(ylabel="%", ylim=(0, 105), title=f"{family}: real vs controls")
        ax.legend(fontsize=7)
    return fig
