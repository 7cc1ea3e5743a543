"""The ground truth a temporal-grounding reward compares with: the windows clipped to the video."""

from __future__ import annotations

from videorl.data.records import TaskRecord, TemporalAnswer
from videorl.rewards.geometry import clip_window


def ground_truth(record: TaskRecord) -> list[tuple[float, float]]:
    """The record's windows clipped to [0, duration]."""
    answer = record.answer_as(TemporalAnswer)
    return [clip_window(window, record.duration) for window in answer.windows]
