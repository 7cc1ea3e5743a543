"""OraRL's temporal grounding reward, exactly as its adapter scores it.

Against ours (`rewards/orarl_parsing.py` says what every adapter shares; docs/fidelity.md):

- temporal grounding: `S to E` / `S and E` with whitespace around the word, no `s`
  suffix, no exponent; S > E is format 0; the span is compared unsorted-safe (tIoU of the
  sorted pair);

Ground-truth windows stay clipped to the video's duration (as the annotation row
serializes them).
"""

from __future__ import annotations

import re

from videorl.data.records import TaskRecord
from videorl.rewards.orarl_parsing import NUMBER, canonical_payload, interval_iou
from videorl.rewards.registry import Components
from videorl.tasks.temporal_grounding.truth import ground_truth

_SPAN = re.compile(rf"\s*({NUMBER})\s+(?:to|and)\s+({NUMBER})\s*", re.IGNORECASE)


def adapter(record: TaskRecord, response: str) -> tuple[float, Components]:
    payload = canonical_payload(response)
    found = None if payload is None else _SPAN.fullmatch(payload)
    span = None if found is None else (float(found.group(1)), float(found.group(2)))
    if span is not None and span[0] > span[1]:
        span = None
    iou = 0.0 if span is None else max(interval_iou(span, w) for w in ground_truth(record))
    return (0.0 if span is None else 1.0), {"task": iou, "iou": iou}
