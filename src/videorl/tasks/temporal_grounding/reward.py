"""Temporal grounding (TG): payload `S to E` in seconds, an optional `s` suffix
(`8.50s to 12.40s`), `and` accepted for `to`, 0 <= S <= E; task = tIoU, or the TaRO shaped
`iou_v2` when `tg_shaping = "iou_v2"` (docs/methods.md#temporal-iou).

With several ground-truth windows the best one counts. The ground truth is clipped to
[0, duration]; without a known duration `iou_v2` falls back to plain tIoU.
"""

from __future__ import annotations

import re

from videorl.data.records import TaskRecord
from videorl.rewards.config import RewardConfig
from videorl.rewards.geometry import temporal_iou, temporal_iou_v2
from videorl.rewards.payload import MAX_PAYLOAD_CHARS, NUMBER, format_number
from videorl.rewards.protocol import TAGGED
from videorl.rewards.registry import FAMILY_REWARDS, FamilyReward
from videorl.tasks.temporal_grounding.truth import ground_truth

_SPAN = re.compile(rf"\s*({NUMBER})\s*s?\s*(?:to|and)\s*({NUMBER})\s*s?\s*", re.IGNORECASE)


def parse(payload: str) -> tuple[float, float] | None:
    """`(S, E)` from `S to E`, else None (also for S > E, negative or non-finite times)."""
    if len(payload) > MAX_PAYLOAD_CHARS:
        return None
    match = _SPAN.fullmatch(payload)
    if match is None:
        return None
    start, end = float(match.group(1)), float(match.group(2))
    if not (0.0 <= start <= end < float("inf")):
        return None
    return (start, end)


# TaRO's `parse_timestamp_output`: every `Xs to Ys` (or `and`) inside the answer; the last wins.
_TARO_SPAN = re.compile(r"(\d+\.?\d*)s (?:to|and) (\d+\.?\d*)s", re.IGNORECASE)


def parse_taro(payload: str) -> tuple[float, float] | None:
    """`(S, E)` from the last `Xs to Ys` in a verbose answer (`s` suffix required), else
    None; S > E gives None (TaRO's IoU of such a span is 0 too)."""
    if len(payload) > MAX_PAYLOAD_CHARS:
        return None
    spans = _TARO_SPAN.findall(payload)
    if not spans:
        return None
    start, end = float(spans[-1][0]), float(spans[-1][1])
    return (start, end) if 0.0 <= start <= end < float("inf") else None


def score(record: TaskRecord, payload: str, config: RewardConfig) -> dict[str, float]:
    """`task` (tIoU or iou_v2), `iou` (plain tIoU, always) and `iou_v2` when shaping."""
    windows = ground_truth(record)
    pred = parse_taro(payload) if config.tg_parser == "taro" else parse(payload)
    iou = 0.0 if pred is None else max(temporal_iou(pred, gt) for gt in windows)
    if config.tg_shaping != "iou_v2":
        return {"task": iou, "iou": iou}
    if pred is None:
        shaped = 0.0
    elif record.duration is None or record.duration <= 0:
        shaped = iou
    else:
        shaped = max(temporal_iou_v2(pred, gt, record.duration) for gt in windows)
    return {"task": shaped, "iou": iou, "iou_v2": shaped}


def serialize(record: TaskRecord) -> str:
    """The first (clipped) window as `S to E`, e.g. `2.5 to 7`."""
    start, end = ground_truth(record)[0]
    return f"{format_number(start)} to {format_number(end)}"


from videorl.tasks.temporal_grounding import orarl

FAMILY_REWARDS.register(
    "temporal_grounding", FamilyReward(score, serialize, TAGGED, orarl=orarl.adapter)
)
