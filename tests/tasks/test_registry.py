"""The task registry: every built-in family's module registers its parts, and they agree."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from tests.rewards.factories import all_records
from videorl.data.families import BUILTIN_FAMILIES, TASKS, Family, families, parse_family
from videorl.data.prompts import build_prompt
from videorl.data.synth import FAMILY_SYNTHS
from videorl.errors import ConfigError
from videorl.eval.scoring import FAMILY_EVALS, score_record
from videorl.rewards.config import RewardConfig
from videorl.rewards.protocol import Protocol
from videorl.rewards.registry import FAMILY_REWARDS
from videorl.rewards.router import score_response


def test_every_builtin_family_registers_its_parts():
    assert tuple(f.value for f in families())[: len(BUILTIN_FAMILIES)] == BUILTIN_FAMILIES
    assert len({TASKS.lookup(name).short for name in BUILTIN_FAMILIES}) == len(BUILTIN_FAMILIES)
    for name in BUILTIN_FAMILIES:
        task, reward, evaluation = (
            Family(name).task,
            FAMILY_REWARDS[Family(name)],
            FAMILY_EVALS[Family(name)],
        )
        assert task.name == name
        assert callable(reward.score) and callable(reward.serialize), name
        assert isinstance(reward.protocol, Protocol), name
        synth = FAMILY_SYNTHS[Family(name)]
        for part in (task.prompt, evaluation.score, evaluation.summary, synth, task.answer):
            assert callable(part), (name, part)
        assert len(inspect.signature(evaluation.score).parameters) == 2, name


def test_a_perfect_answer_scores_full_marks_through_the_registry():
    """Each family's serializer, wrapped by its protocol, is scored 1 by its reward and its
    evaluation scorer: the module's parts agree with one another."""
    for name, record in all_records().items():
        reward = FAMILY_REWARDS[record.family]
        answer = reward.protocol.wrap(reward.serialize(record), False)
        assert build_prompt(record, think=False), name
        assert score_response(record, answer, RewardConfig()).components["task"] == 1.0, name
        assert score_record(record, answer).score == 1.0, name


def test_names_and_aliases_resolve_and_unknown_names_are_refused():
    assert parse_family("tg") == Family("temporal_grounding")
    assert parse_family("Moment-Retrieval") == Family("temporal_grounding")
    assert parse_family("text_math") == Family("math")
    with pytest.raises(ConfigError, match="did you mean"):
        parse_family("tempral_grounding")


def test_a_family_survives_pickling_as_an_equal_value():
    import pickle

    assert pickle.loads(pickle.dumps(Family("video_qa"))) == Family("video_qa")
    assert Family("math").value == "math"


def test_code_outside_tasks_asks_families_instead_of_naming_them():
    """`Family("<name>")` outside `tasks/` only where a dataset format or a default
    names its family (at most 10); behaviour is declared by the family's flags."""
    src = Path(__file__).resolve().parents[2] / "src" / "videorl"
    named = re.compile(r'\bFamily\("[a-z_]+"\)')
    uses = [
        f"{path.relative_to(src)}: {match}"
        for path in src.rglob("*.py")
        if "tasks" not in path.relative_to(src).parts[:1]
        for match in named.findall(path.read_text())
    ]
    assert len(uses) <= 10, "\n".join(uses)
