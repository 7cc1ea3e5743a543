"""Temporal grounding metrics (docs/methods.md#evaluation-metrics).

Per query: `IoU = max over ground-truth windows g of tIoU(p, clip(g, [0, duration]))`, with
`tIoU(p, g) = max(0, min(pe, ge) - max(ps, gs)) / (max(pe, ge) - min(ps, gs))` (section
1.1); an unparseable answer has IoU 0 and stays in the denominator. Over N queries:
`R1@m = 100 / N * #{IoU >= m}` for m in {0.3, 0.5, 0.7} and `mIoU = 100 / N * sum IoU`.
The prediction is not clipped (a window past the end of the video loses IoU, as in the
standard Charades-STA / ActivityNet / QVHighlights evaluations).
"""

from __future__ import annotations

from collections.abc import Sequence

from videorl.rewards.geometry import clip_window, temporal_iou

THRESHOLDS = (0.3, 0.5, 0.7)
# Video-length buckets of the report's breakdown, in seconds: [low, high).
DURATION_BUCKETS = ((0.0, 30.0), (30.0, 60.0), (60.0, 120.0), (120.0, 300.0), (300.0, float("inf")))


def query_iou(
    pred: Sequence[float] | None, windows: Sequence[Sequence[float]], duration: float | None
) -> float:
    """The best tIoU of the predicted window over the (clipped) ground-truth windows; 0 when
    nothing was predicted. Example: p = [3, 7], windows [[0, 1], [2, 6]] -> 0.6."""
    if pred is None or not windows:
        return 0.0
    return max(temporal_iou(pred, clip_window(window, duration)) for window in windows)


def recall_at(ious: Sequence[float], threshold: float) -> float:
    """`100 * #{IoU >= threshold} / N` (0 for no queries)."""
    return 100.0 * sum(iou >= threshold for iou in ious) / len(ious) if ious else 0.0


def summarize(ious: Sequence[float]) -> dict[str, float]:
    """`R1@0.3`, `R1@0.5`, `R1@0.7` and `mIoU`, in percent."""
    out = {f"R1@{t}": recall_at(ious, t) for t in THRESHOLDS}
    out["mIoU"] = 100.0 * sum(ious) / len(ious) if ious else 0.0
    return out


def bucket_rank(label: str) -> int:
    """Position of a `duration_bucket` label, shortest videos first (`unknown` last)."""
    labels = [duration_bucket(low) for low, _ in DURATION_BUCKETS]
    return labels.index(label) if label in labels else len(labels)


def duration_bucket(duration: float | None) -> str:
    """The report label of a video length: `<30 s`, `30-60 s`, ..., `>=300 s`, `unknown`."""
    if duration is None:
        return "unknown"
    for low, high in DURATION_BUCKETS:
        if low <= duration < high:
            if low == 0:
                return f"<{high:g} s"
            return f">={low:g} s" if high == float("inf") else f"{low:g}-{high:g} s"
    return "unknown"
