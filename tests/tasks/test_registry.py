"""The task registry: every built-in family's module registers its parts, and they agree."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from tests.rewards.factories import all_records
from videorl.data.families import BUILTIN_FAMILIES, TASKS, Family, families, parse_family
from videorl.data.prompts import build_prompt
from videorl.errors import ConfigError
from videorl.eval.scoring import score_record
from videorl.rewards.config import RewardConfig
from videorl.rewards.protocol import TAGGED, Protocol
from videorl.rewards.router import score_response


def test_every_builtin_family_registers_its_parts():
    assert tuple(f.value for f in families())[: len(BUILTIN_FAMILIES)] == BUILTIN_FAMILIES
    assert len({TASKS.lookup(name).short for name in BUILTIN_FAMILIES}) == len(BUILTIN_FAMILIES)
    for name in BUILTIN_FAMILIES:
        task = Family(name).task
        assert task.name == name
        assert callable(task.reward) and callable(task.serialize), name
        assert isinstance(task.protocol or TAGGED, Protocol), name
        for part in (task.prompt, task.eval_score, task.summary, task.synth, task.answer):
            assert callable(part), (name, part)
        assert len(inspect.signature(task.eval_score).parameters) == 2, name


def test_a_perfect_answer_scores_full_marks_through_the_registry():
    """Each family's serializer, wrapped by its protocol, is scored 1 by its reward and its
    evaluation scorer: the module's parts agree with one another."""
    for name, record in all_records().items():
        task = record.family.task
        answer = (task.protocol or TAGGED).wrap(task.serialize(record), False)
        assert build_prompt(record, think=False), name
        assert score_response(record, answer, RewardConfig()).components["task"] == 1.0, name
        assert score_record(record, answer).score == 1.0, name


def test_names_and_aliases_resolve_and_unknown_names_are_refused():
    assert parse_family("tg") is Family.TEMPORAL_GROUNDING
    assert parse_family("Moment-Retrieval") is Family.TEMPORAL_GROUNDING
    assert parse_family("text_math") is Family.MATH
    with pytest.raises(ConfigError, match="did you mean"):
        parse_family("tempral_grounding")


def test_a_family_survives_pickling_as_the_same_instance():
    import pickle

    assert pickle.loads(pickle.dumps(Family.VIDEO_QA)) is Family.VIDEO_QA
    assert str(Family.MATH) == "Family.MATH" and Family.MATH.value == "math"


def test_code_outside_tasks_asks_families_instead_of_naming_them():
    """Issue 34: `Family.<NAME>` outside `tasks/` only where a dataset format or a default
    names its family (at most 10); behaviour is declared by the family's flags."""
    src = Path(__file__).resolve().parents[2] / "src" / "videorl"
    named = re.compile(r"\bFamily\.[A-Z][A-Z_]+\b")
    uses = [
        f"{path.relative_to(src)}: {match}"
        for path in src.rglob("*.py")
        if "tasks" not in path.relative_to(src).parts[:1]
        for match in named.findall(path.read_text())
    ]
    assert len(uses) <= 10, "\n".join(uses)
