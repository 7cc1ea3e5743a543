"""Video controls in evaluation (`videorl eval --controls frozen,reversed,shuffled,blank`).

The same records are answered again with their media replaced by a control made in memory
from the decoded frames (`video/controls.py`), and each family's metrics are reported per
control with the **video gain**, the score on the real media minus the score on the
control, computed over the same records:

    video_gain[control][family][metric] = real[family][metric] - control[family][metric]

A temporal control (frozen, reversed, shuffled) applies to video records only; `blank`
to every record with media; text-only records (math) have no control. Predictions go to
`OUT/controls/<control>/predictions.jsonl` (a `--resume` continues them like the real ones).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from videorl.data.records import TaskRecord
from videorl.eval.scoring import SampleResult, summarize
from videorl.video.controls import TEMPORAL


def control_applies(record: TaskRecord, control: str) -> bool:
    """Temporal controls need a video; `blank` any media; text-only records have none."""
    if control in TEMPORAL:
        return record.video is not None
    return record.media is not None


def _family_metrics(results: Sequence[SampleResult]) -> dict[str, dict[str, float]]:
    return {family.value: s.metrics for family, s in summarize(results).items()}


def control_summary(
    control: Sequence[SampleResult], real: Sequence[SampleResult]
) -> dict[str, Any]:
    """metrics.json's entry of one control: its metrics, the real media's metrics over the
    same records, and their difference (the video gain), per family."""
    on_control, on_real = _family_metrics(control), _family_metrics(real)
    gain = {
        family: {
            m: value - on_control[family][m]
            for m, value in metrics.items()
            if m in on_control.get(family, {})
        }
        for family, metrics in on_real.items()
    }
    return {"n": len(control), "families": on_control, "real": on_real, "video_gain": gain}


def by_family(controls: dict[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    """metrics.json's controls regrouped: family -> control -> that control's entry (only
    the controls that apply to the family), families in first-seen order."""
    grouped: dict[str, dict[str, dict[str, Any]]] = {}
    for control, entry in controls.items():
        for family in entry["video_gain"]:
            grouped.setdefault(family, {})[control] = entry
    return grouped


def gain_rows(metrics: dict[str, Any]) -> list[tuple[str, str, str, float, float, float]]:
    """(control, family, metric, real, control, gain) for every control in `metrics.json`."""
    rows = []
    for control, entry in metrics.get("controls", {}).items():
        for family, gains in entry["video_gain"].items():
            for metric, gain in gains.items():
                real = entry["real"][family][metric]
                rows.append((control, family, metric, real, real - gain, gain))
    return rows
