"""Group building details that follow the published code: OraRL's annotation truncation
keeps the tail; TaRO's constructed prefix (issue 16, item 5). Multi-turn groups on engines
that step in lockstep."""

from __future__ import annotations

import random
import types

import pytest
import torch

from tests.rewards.factories import make
from videorl.models.generate import Generation, SamplingParams
from videorl.models.inputs import PromptEncoding
from videorl.rollout.batch import RolloutBatch
from videorl.rollout.groups import (
    add_annotation_rows,
    constructed_prefix,
    generate_groups,
    generate_tool_groups,
)
from videorl.rollout.multiturn import MultiTurnLimits
from videorl.rollout.tools import ToolDecodes, ToolRunner
from videorl.video.decode import VideoConfig

EOS = 99


class CharTokenizer:
    """One token per character (ids = code points), enough for the group builders."""

    def encode(self, text, add_special_tokens=False):
        return [ord(c) for c in text]

    def batch_decode(self, rows, skip_special_tokens=True):
        return ["".join(chr(int(t)) for t in row if int(t) != EOS) for row in rows]

    def decode(self, row, skip_special_tokens=True):
        return self.batch_decode([row])[0]


def _batch(records):
    n = len(records)
    return RolloutBatch(
        records=records,
        prompts=[PromptEncoding(input_ids=torch.tensor([1]))] * n,
        videos=[None] * n,
        group_ids=torch.arange(n),
        responses=[torch.tensor([5, EOS])] * n,
        texts=["x"] * n,
        is_annotation=torch.zeros(n, dtype=torch.bool),
        off_policy=torch.zeros(n, dtype=torch.bool),
        truncated=torch.zeros(n, dtype=torch.bool),
    )


def test_annotation_truncation_keeps_answer_close_and_eos():
    record = make("temporal_grounding", {"windows": [[2.5, 7.0]]}, duration=30.0)
    text = "<answer>2.5 to 7</answer>"
    full = add_annotation_rows(_batch([record]), CharTokenizer(), EOS, budget=64)
    assert full.responses[-1].tolist() == [ord(c) for c in text] + [EOS]
    assert not bool(full.truncated[-1])
    cut = add_annotation_rows(_batch([record]), CharTokenizer(), EOS, budget=12)
    row = cut.responses[-1].tolist()
    assert len(row) == 12 and row[-1] == EOS
    assert "".join(map(chr, row[:-1])).endswith("</answer>")
    assert bool(cut.truncated[-1])


def test_constructed_prefix_as_taro_builds_it():
    record = make(
        "temporal_grounding",
        {"windows": [[2, 6]]},
        problem="a person opens the door.",
        captions=[[0, 2, "a hallway"], [2, 6.25, "a person opens the door"]],
    )
    text = constructed_prefix(record, random.Random(3))
    head = "<think>\nI need to find the specific moment a person opens the door.\n"
    assert text.startswith(head) and "door..\n" not in text
    lines = text[len(head) :].split("\n")
    assert set(lines) <= {
        "From 0.0s to 2.0s, a hallway",
        "From 2.0s to 6.2s, a person opens the door",
    }
    assert lines and not text.endswith("\n")  # TaRO joins the captions with "\n"


class RecordingEngine:
    def __init__(self):
        self.prefixed = []

    def generate(self, prompts, params):
        row = torch.tensor([7, EOS])
        return [
            Generation([row] * params.n, [torch.zeros(2)] * params.n, [False] * params.n)
        ] * len(prompts)

    def continue_prefixes(self, prompts, prefixes, params):
        self.prefixed.extend(prefixes)
        return [Generation([torch.tensor([8, EOS])], [torch.zeros(2)], [False]) for _ in prompts]


def test_record_without_captions_gets_normal_rollouts():
    from videorl.models.generate import SamplingParams

    with_captions = make("temporal_grounding", {"windows": [[2, 6]]}, captions=[[0, 2, "a"]])
    without = make("temporal_grounding", {"windows": [[2, 6]]}, id="tg-2")
    engine = RecordingEngine()
    batch = generate_groups(
        engine,  # type: ignore[arg-type]  # a recording stand-in engine
        [with_captions, without],
        [PromptEncoding(input_ids=torch.tensor([1]))] * 2,
        [None, None],
        SamplingParams(n=2),
        CharTokenizer(),
        constructed=torch.ones(2, 2, dtype=torch.bool),
        rng=random.Random(0),
    )
    assert batch.off_policy.tolist() == [True, True, False, False]
    assert len(engine.prefixed) == 2


class AnsweringEngine:
    """Answers every context at once (no tool call); records each call's number of contexts."""

    def __init__(self, lockstep: bool) -> None:
        self.lockstep = lockstep
        self.loaded = types.SimpleNamespace(tokenizer=CharTokenizer(), eos_token_ids=[EOS])
        self.calls: list[int] = []

    def generate(self, prompts, params):
        self.calls.append(len(prompts))
        answer = torch.tensor([ord(c) for c in "<answer>B</answer>"] + [EOS])
        return [Generation([answer] * params.n, [], [False] * params.n) for _ in prompts]


@pytest.mark.parametrize(
    ("lockstep", "prompts", "calls"),
    [(False, 1, [1]), (True, 1, [1, 0, 0]), (True, 0, [0, 0, 0])],
)
def test_multi_turn_groups_make_max_turns_calls_on_a_lockstep_engine(lockstep, prompts, calls):
    """vLLM's data-parallel engines (and a tensor-parallel group's ranks) pair their calls
    across ranks: a rank whose rows are done keeps calling, with no requests, up to
    `max_turns` calls, as many as a rank whose rows use every turn."""
    engine = AnsweringEngine(lockstep)
    records = [make("temporal_grounding", {"windows": [[2, 6]]})] * prompts
    batch = generate_tool_groups(
        engine,  # type: ignore[arg-type]
        records,
        [PromptEncoding(input_ids=torch.tensor([1]))] * prompts,
        [None] * prompts,
        SamplingParams(n=2, max_new_tokens=32),
        runner=ToolRunner([]),
        limits=MultiTurnLimits(max_turns=3),
        decodes=ToolDecodes(),
        video_config=VideoConfig(),
    )
    assert engine.calls == calls
    assert batch.texts == ["<answer>B</answer>"] * 2 * prompts
