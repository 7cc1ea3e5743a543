"""Spatial grounding's prompts: videorl's and OraRL's, verbatim."""

from __future__ import annotations

from videorl.data.prompts import BOX, coordinates_sentence
from videorl.data.records import TaskRecord


def spatial(record: TaskRecord) -> str:
    medium = "image" if record.video is None else "video frame"
    return (
        f"Locate {record.problem} in the {medium}. Answer with its bounding box as "
        f"<answer>{BOX}</answer>. {coordinates_sentence(record, medium)}"
    )


ORARL_SG = (
    'Locate "{}" in the image. Output its bounding box in JSON format '
    "within <answer>...</answer> tags. "
    'Example: <answer>[{{"bbox_2d": [123, 30, 404, 846]}}]</answer>'
)


def _sentence(text: str) -> str:
    """OraRL's spatial-grounding expression: stripped, ending in `.`, `?` or `!`."""
    text = text.strip()
    return text + "." if text and text[-1] not in ".?!" else text


def orarl_spatial(record: TaskRecord) -> str:
    return ORARL_SG.format(_sentence(record.problem))
