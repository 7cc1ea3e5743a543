"""Tracking: how a benchmark scores it, AO and SR@0.5 (`eval/metrics/boxes.py`); the blind
best is, per asked frame f, the box `(1 - a_f) B0 + a_f F_f`: the first box `B0` the prompt
states, moved towards `F_f`, the best fixed box of frame f (fractions of the stated frame,
on the grid of `tasks/fixed_answers.py`), by the `a_f` in `BLENDS` maximising training IoU
(the prompt states the first box, the frames asked and the frame size; the synthetic object
moves at a random speed and direction).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from videorl.data.records import TaskRecord, TrackingAnswer
from videorl.eval.blind import fixed_metrics
from videorl.eval.metrics import boxes
from videorl.eval.scoring import FAMILY_EVALS, FamilyEval, SampleResult, Scored, values_of
from videorl.rewards.payload import key_value
from videorl.tasks.fixed_answers import (
    best_box,
    box_ious,
    frame_of,
    framed,
    to_fractions,
    to_frame,
)
from videorl.tasks.tracking.parsing import parse_tracking

BLENDS = (0.0, 0.25, 0.5, 0.75, 1.0)  # a_f: 0 holds the first box, 1 is the fixed box


def score_tracking(record: TaskRecord, text: str) -> Scored:
    pred = parse_tracking(text)
    values = boxes.sequence_scores(boxes.frame_ious(pred, record.answer_as(TrackingAnswer).boxes))
    prediction = None if pred is None else {str(k): list(b) for k, b in pred.items()}
    return prediction, {"score": values["ao"], **values}


def summarize_tracking(samples: Sequence[SampleResult]) -> dict[str, float]:
    return boxes.summarize_tracking(values_of(samples, "ao"), values_of(samples, "sr"))


def first_box(record: TaskRecord, fixed: np.ndarray) -> np.ndarray:
    """The frame-0 box the prompt states (fractions), `fixed` where it states none."""
    first = record.extra.get("first_box")
    return fixed if first is None else to_fractions(tuple(first), frame_of(record))


FrameFit = tuple[float, np.ndarray]  # (a_f, F_f)


def fit_frame(pairs: list[tuple[TaskRecord, np.ndarray]]) -> FrameFit:
    """`(a_f, F_f)` of one frame from its (record, target box in fractions) pairs."""
    targets = np.stack([target for _, target in pairs])
    fixed = best_box(targets)
    firsts = np.stack([first_box(record, fixed) for record, _ in pairs])
    totals = [box_ious((1 - a) * firsts + a * fixed, targets).sum() for a in BLENDS]
    return BLENDS[int(np.argmax(totals))], fixed


def fit_frames(train: Sequence[TaskRecord]) -> dict[float, FrameFit]:
    """Frame number -> its fit, over the training records that ask for that frame."""
    pairs: dict[float, list[tuple[TaskRecord, np.ndarray]]] = defaultdict(list)
    for record in train:
        for frame, box in record.answer_as(TrackingAnswer).boxes.items():
            pairs[float(key_value(frame))].append((record, to_fractions(box, frame_of(record))))
    return {frame: fit_frame(found) for frame, found in sorted(pairs.items())}


def blind_answer(record: TaskRecord, fits: dict[float, FrameFit]) -> str:
    """The blind boxes of every frame the record asks for (a frame no training record
    asked for takes the nearest fitted frame's fit)."""
    out = {}
    for frame in record.answer_as(TrackingAnswer).boxes:
        number = float(key_value(frame))
        blend, fixed = fits[min(fits, key=lambda f: abs(f - number))]
        box = (1 - blend) * first_box(record, fixed) + blend * fixed
        out[frame] = to_frame(box, frame_of(record))
    return json.dumps({"boxes": out})


def blind_tracking(train: Sequence[TaskRecord], val: Sequence[TaskRecord]) -> dict[str, Any]:
    """The per-frame fits on `train`, their metrics on `val`; records stating no frame size
    are left out (none left in a split: `{}`)."""
    train, val = framed(train), framed(val)
    if not train or not val:
        return {}
    fits = fit_frames(train)
    blends = sorted({blend for blend, _ in fits.values()})
    description = "per frame f: (1 - a_f) first box + a_f fixed box, a_f in " + ", ".join(
        f"{b:g}" for b in blends
    )
    return fixed_metrics(val, lambda r: blind_answer(r, fits), description)


FAMILY_EVALS.register(
    "tracking",
    FamilyEval(score_tracking, summarize_tracking, sample_metric="ao", blind=blind_tracking),
)
