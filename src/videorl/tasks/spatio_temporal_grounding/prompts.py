"""Spatio-temporal grounding's prompts: videorl's and OraRL's, verbatim."""

from __future__ import annotations

import itertools

from videorl.data.prompts import BOX, coordinates_sentence, duration_sentence, short_number
from videorl.data.records import SpatioTemporalAnswer, TaskRecord


def _grid_step(record: TaskRecord) -> float:
    """Spacing of the ground-truth box keys (1 s when there is at most one key)."""
    keys = sorted({float(k) for k in record.answer_as(SpatioTemporalAnswer).boxes})
    steps = [b - a for a, b in itertools.pairwise(keys) if b > a]
    return min(steps) if steps else 1.0


def spatio_temporal(record: TaskRecord) -> str:
    step = _grid_step(record)
    grid = ", ".join(short_number(k * step) for k in range(3))
    return (
        f"{duration_sentence(record)}Find when and where {record.problem} appears. Answer with JSON "
        f'<answer>{{"time": [t0, t1], "boxes": {{"<second>": {BOX}, ...}}}}</answer>: the '
        f"start and end time in seconds, and its box at every time on the {short_number(step)} s grid "
        f"({grid}, ...) between t0 and t1, keyed by that time. "
        f"{coordinates_sentence(record, 'video frame')}"
    )


ORARL_GROUNDING_QUESTION = "{}\nPlease answer this question based on the visual content. "
ORARL_STG_QUESTION = (
    'Given the query "{}", when and where does the described content '
    "occur in the video? please firstly give the start and end time, spatial "
    "bounding box corresponding to each integer second."
)
ORARL_STG_TAIL = (
    "Please provide only the time span in seconds and bounding boxes as JSON "
    "within the <answer>...</answer> tags.\n"
    "You MUST output one bounding box for every integer second within the "
    "given time span (inclusive).\n"
    "Example:\n"
    '<answer>{"time": [8.1, 13.5], "boxes": {"9": [317, 422, 582, 997], '
    '"10": [332, 175, 442, 369], "11": [340, 180, 450, 370]}}</answer>\n'
    "Note: Each key in 'boxes' must be an integer second within the span, "
    "and its value must be a 4-number bounding box [x1, y1, x2, y2]."
)


def orarl_spatio_temporal(record: TaskRecord) -> str:
    question = ORARL_STG_QUESTION.format(record.problem)
    return ORARL_GROUNDING_QUESTION.format(question) + ORARL_STG_TAIL
