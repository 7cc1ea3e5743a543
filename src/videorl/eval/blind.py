"""The blind best: how well an answer that ignores the media can score.

A task that a prompt-only answer solves cannot show that a model looks. For each family
with such a baseline (`FamilyEval.blind`, in `tasks/<family>/evaluation.py`), the best
*fixed* answer given what the prompt says is fitted on the training records and scored on
the validation records.

`videorl synth` writes these numbers into its manifest (`blind_best`), so the validation
set's floor is known before any model is trained.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from videorl.data.families import families
from videorl.data.records import TaskRecord
from videorl.eval.scoring import FAMILY_EVALS


def blind_best(train: Sequence[TaskRecord], val: Sequence[TaskRecord]) -> dict[str, dict[str, Any]]:
    """Per family with a blind baseline and records in both splits (that it can fit: a
    family may leave records out): its validation metrics."""
    out = {}
    for family in families():
        fit = FAMILY_EVALS[family].blind
        if fit is None:
            continue
        tr = [r for r in train if r.family == family]
        va = [r for r in val if r.family == family]
        if tr and va and (numbers := fit(tr, va)):
            out[family.value] = numbers
    return out
