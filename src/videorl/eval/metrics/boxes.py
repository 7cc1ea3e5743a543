"""Box metrics: spatial grounding, tracking and spatio-temporal grounding
(docs/methods.md#evaluation-metrics).

- SG, per sample `IoU(pred box, gt box)` (0 when unparsed); `Acc@m = 100 / N * #{IoU >= m}`
  for m in {0.5, 0.7, 0.9}; `mIoU = 100 / N * sum IoU`.
- TRK (GOT-10k definitions), per sequence over its ground-truth frames F: frame IoU
  `o_f` (a frame without a predicted box has o_f = 0); `AO_seq = mean_f o_f`,
  `SR_seq = #{o_f > 0.5} / |F|` (strictly greater, as in the GOT-10k toolkit); the
  benchmark's `AO` and `SR@0.5` are the means over sequences, in percent.
- STG, per sample: `tIoU` of the predicted window with the clipped ground-truth window, and
  `sIoU = mean over ground-truth seconds of IoU(box at the nearest predicted second within
  0.5 s, gt box)` (missing = 0; the matching of the STG reward). Reported: `m_tIoU`,
  `m_sIoU` and `tIoU@0.5`, `sIoU@0.5` (fraction >= 0.5), in percent.

Boxes are compared in the record's declared `box_format`, the one the prompt asks for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from videorl.rewards.geometry import box_iou, clip_window, nearest_box, temporal_iou
from videorl.rewards.payload import Box, key_value

SG_THRESHOLDS = (0.5, 0.7, 0.9)
SUCCESS_THRESHOLD = 0.5
STG_THRESHOLD = 0.5


def _percent(values: Sequence[float]) -> float:
    return 100.0 * sum(values) / len(values) if values else 0.0


def sample_box_iou(pred: Box | None, gt: Box) -> float:
    """IoU of the predicted and ground-truth boxes; 0 when nothing was predicted."""
    return 0.0 if pred is None else box_iou(pred, gt)


def summarize_grounding(ious: Sequence[float]) -> dict[str, float]:
    """`Acc@0.5`, `Acc@0.7`, `Acc@0.9` and `mIoU`, in percent."""
    out = {f"Acc@{t}": _percent([float(iou >= t) for iou in ious]) for t in SG_THRESHOLDS}
    out["mIoU"] = _percent(ious)
    return out


def frame_ious(pred: Mapping[float | str, Box] | None, gt: Mapping[str, Box]) -> list[float]:
    """IoU per ground-truth frame (keys matched numerically, missing frames 0)."""
    pred = pred or {}
    return [sample_box_iou(pred.get(key_value(frame)), box) for frame, box in gt.items()]


def sequence_scores(ious: Sequence[float]) -> dict[str, float]:
    """`ao` = mean frame IoU and `sr` = fraction of frames with IoU > 0.5 (fractions)."""
    if not ious:
        return {"ao": 0.0, "sr": 0.0}
    return {
        "ao": sum(ious) / len(ious),
        "sr": sum(iou > SUCCESS_THRESHOLD for iou in ious) / len(ious),
    }


def summarize_tracking(ao: Sequence[float], sr: Sequence[float]) -> dict[str, float]:
    """`AO` and `SR@0.5`: means over sequences, in percent."""
    return {"AO": _percent(ao), "SR@0.5": _percent(sr)}


def spatio_temporal_scores(
    pred_window: Sequence[float] | None,
    pred_boxes: Mapping[float, Box],
    gt_window: Sequence[float],
    gt_boxes: Mapping[str, Box],
    duration: float | None,
) -> dict[str, float]:
    """`tiou` and `siou` of one sample (fractions)."""
    tiou = (
        0.0 if pred_window is None else temporal_iou(pred_window, clip_window(gt_window, duration))
    )
    ious = []
    for second, gt_box in gt_boxes.items():
        at = key_value(second)
        box = nearest_box(dict(pred_boxes), at) if isinstance(at, float) else None
        ious.append(sample_box_iou(box, gt_box))
    return {"tiou": tiou, "siou": sum(ious) / len(ious) if ious else 0.0}


def summarize_spatio_temporal(tious: Sequence[float], sious: Sequence[float]) -> dict[str, float]:
    """`m_tIoU`, `m_sIoU`, `tIoU@0.5` and `sIoU@0.5`, in percent."""
    return {
        "m_tIoU": _percent(tious),
        "m_sIoU": _percent(sious),
        "tIoU@0.5": _percent([float(t >= STG_THRESHOLD) for t in tious]),
        "sIoU@0.5": _percent([float(s >= STG_THRESHOLD) for s in sious]),
    }
