"""The FamilySpec table: one row per family naming everything the family uses."""

from __future__ import annotations

import inspect

from tests.rewards.factories import all_records
from videorl.data.families import FAMILY_SPECS, Family
from videorl.data.prompts import build_prompt
from videorl.eval.scoring import score_record
from videorl.rewards.config import RewardConfig
from videorl.rewards.protocol import Protocol
from videorl.rewards.router import score_response


def test_every_family_has_a_spec_whose_references_resolve():
    assert set(FAMILY_SPECS) == set(Family)
    assert len({spec.short for spec in FAMILY_SPECS.values()}) == len(Family)
    for family, spec in FAMILY_SPECS.items():
        reward = spec.resolve("reward")
        assert callable(reward.score) and callable(reward.serialize), family
        assert isinstance(spec.resolve("protocol"), Protocol), family
        for part in ("prompt", "eval_score", "summary"):
            assert callable(spec.resolve(part)), (family, part)
        assert len(inspect.signature(spec.resolve("eval_score")).parameters) == 2, family


def test_a_perfect_answer_scores_full_marks_through_the_spec():
    """Each family's serializer, wrapped by its protocol, is scored 1 by its reward and its
    evaluation scorer: the spec's parts agree with one another."""
    for name, record in all_records().items():
        spec = record.family.spec
        answer = spec.resolve("protocol").wrap(spec.resolve("reward").serialize(record), False)
        assert build_prompt(record, think=False), name
        assert score_response(record, answer, RewardConfig()).components["task"] == 1.0, name
        assert score_record(record, answer).score == 1.0, name
