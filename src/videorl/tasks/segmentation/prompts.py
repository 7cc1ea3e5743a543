"""Segmentation's prompts: videorl's and OraRL's (image and video tails), verbatim."""

from __future__ import annotations

from videorl.data.prompts import BOX, coordinates_sentence
from videorl.data.records import TaskRecord


def segmentation(record: TaskRecord) -> str:
    is_video = record.video is not None
    medium = "video frame" if is_video else "image"
    time_field = ', "time": t' if is_video else ""
    time_text = (
        " and t, a time in seconds at which it is visible (the box and points are for that moment)"
        if is_video
        else ""
    )
    return (
        f"Segment {record.problem} in the {'video' if is_video else 'image'}. Answer with JSON "
        f'<answer>{{"boxes": {BOX}, "positive_points": [[x, y], [x, y], [x, y]], '
        f'"negative_points": [[x, y], [x, y], [x, y]]{time_field}}}</answer>: its bounding '
        "box, three points on it, three points near it but outside it"
        f"{time_text}. {coordinates_sentence(record, medium)}"
    )


_SEG_POINTS = (
    "Choose informative points that help distinguish object vs. background. Prefer negatives "
    "on clear non-object pixels INSIDE the box when safe; otherwise place them just outside on "
    "obvious background. Negatives must NEVER be on the object or on its boundary.\n"
)
ORARL_SEG_IMAGE_TAIL = (
    "Please answer this question based on the visual content. "
    "This task prepares inputs for image object segmentation with a specialized model "
    "(e.g., SAM2).\n"
    "Please provide ONE bounding box, 3 positive points (clearly INSIDE the object), "
    "and 3 negative points (clearly OUTSIDE the object) within the <answer>...</answer> tags.\n"
    + _SEG_POINTS
    + 'Example: <answer>{"boxes": [x1, y1, x2, y2], "positive_points": [[x,y],[x,y],[x,y]], '
    '"negative_points": [[x,y],[x,y],[x,y]]}</answer>'
)
ORARL_SEG_VIDEO_TAIL = (
    "Please answer this question based on the visual content. "
    "This task prepares inputs for video object segmentation with a specialized model "
    "(e.g., SAM2).\n"
    "Please select ONE representative time (in seconds), and provide ONE bounding box, "
    "3 positive points (clearly INSIDE the object), and 3 negative points (clearly OUTSIDE "
    "the object) within the <answer>...</answer> tags.\n"
    + _SEG_POINTS
    + 'Example: <answer>{"time": <time_in_seconds>, "boxes": [x1, y1, x2, y2], '
    '"positive_points": [[x,y],[x,y],[x,y]], "negative_points": [[x,y],[x,y],[x,y]]}</answer>'
)


def orarl_segmentation(record: TaskRecord) -> str:
    tail = ORARL_SEG_VIDEO_TAIL if record.video is not None else ORARL_SEG_IMAGE_TAIL
    return f"{record.problem}\n{tail}"
