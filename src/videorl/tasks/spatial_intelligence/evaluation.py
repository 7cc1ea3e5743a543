"""Spatial intelligence: how a benchmark scores it, MRA for numbers, accuracy for choices (`eval/metrics/choice.py`)."""

from __future__ import annotations

from collections.abc import Sequence

from videorl.eval.metrics import choice
from videorl.eval.scoring import FAMILY_EVALS, FamilyEval, SampleResult
from videorl.tasks.choice_scoring import score_choice_or_number


def summarize_spatial_intelligence(samples: Sequence[SampleResult]) -> dict[str, float]:
    numeric = [bool(x.values["numeric"]) for x in samples]
    return choice.summarize_spatial(
        [x.score for x in samples], numeric, [x.subtype for x in samples]
    )


FAMILY_EVALS.register(
    "spatial_intelligence", FamilyEval(score_choice_or_number, summarize_spatial_intelligence)
)
