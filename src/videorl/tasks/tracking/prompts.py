"""Tracking's prompt (videorl's; OraRL's keys boxes by second, so none is published here)."""

from __future__ import annotations

from videorl.data.prompts import BOX, coordinates_sentence, short_number
from videorl.data.records import TaskRecord, TrackingAnswer


def tracking(record: TaskRecord) -> str:
    frames = sorted(record.answer_as(TrackingAnswer).boxes, key=float)
    fps = record.extra.get("source_fps")
    listed = ", ".join(f"{f} ({short_number(float(f) / fps)} s)" if fps else f for f in frames)
    timing = (
        f"The video has {short_number(fps)} frames per second; frame k is at k / {short_number(fps)} s. "
        if fps
        else ""
    )
    first = record.extra.get("first_box")
    start = f"In frame 0 it is at [{', '.join(short_number(v) for v in first)}]. " if first else ""
    return (
        f"Track {record.problem} through the video. {start}{timing}Give its box in frames "
        f'{listed} as JSON <answer>{{"boxes": {{"<frame>": {BOX}, ...}}}}</answer>. '
        f"{coordinates_sentence(record, 'video frame')}"
    )
