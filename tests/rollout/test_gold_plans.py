"""The gold trajectories `sft.target=tool_trajectory` teaches (rollout/tools/gold.py), one
per tool with a gold plan, and the answer-twice target: each model turn but the last makes
valid calls of the registered tool (the real tool runs them without an error), the calls
land in as many turns as the plan says, and the final answer scores 1."""

from __future__ import annotations

import importlib

import pytest

from videorl.config import FrameSearchConfig
from videorl.data.loaders import load_records
from videorl.data.synth import synthesize
from videorl.models.loading import load_model
from videorl.rewards import answer_twice
from videorl.rewards.config import RewardConfig
from videorl.rewards.router import builtin_score
from videorl.rollout.multiturn import MultiTurnLimits, forced_trajectory
from videorl.rollout.prompting import encode_record
from videorl.rollout.tools import ToolContext, ToolRunner, frame_index, resolve_tools
from videorl.rollout.tools.gold import gold_tool, gold_turns
from videorl.rollout.tools.parsing import parse_tool_calls
from videorl.video.cache import VideoCache
from videorl.video.decode import VideoConfig

for module in ("longvt", "framethinker", "timesearch"):
    importlib.import_module(f"videorl.rollout.tools.{module}")  # registers their tools

PROMPT_VIDEO = VideoConfig(fps=0.25, min_frames=2, max_frames=4, min_pixels=3136, max_pixels=12544)


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    out = tmp_path_factory.mktemp("gold")
    frame_index.configure(FrameSearchConfig(fps=2.0), out / "frame_index")
    return load_records(synthesize(out, ["temporal_grounding"], n=3, seed=5)).records


@pytest.mark.parametrize(
    ("tools", "calls_per_turn", "calls_by_turn"),
    [
        (["get_clip"], 4, [1]),
        (["crop_video"], 4, [2]),  # ParaVT's parallel crops: both halves in one turn
        (["crop_video"], 1, [1, 1]),  # one a turn
        (["select_frames", "get_frame_number"], 4, [1]),
        (["seek_video_frames"], 4, [1]),
    ],
)
def test_gold_turns_call_the_registered_tool_and_answer_right(
    tiny_model_dir, records, tools, calls_per_turn, calls_by_turn
):
    loaded = load_model(tiny_model_dir(), packing=False)
    runner = ToolRunner(resolve_tools(tools))
    videos = VideoCache(PROMPT_VIDEO)
    try:
        for record in records:
            video = videos.get(record.media)  # a video record
            context = ToolContext(media=record.media, video=video, config=PROMPT_VIDEO)
            turns = gold_turns(record, video, False, context.limits, True, tools, calls_per_turn)
            calls = [parse_tool_calls(turn) for turn in turns]
            assert [len(c) for c in calls] == [*calls_by_turn, 0]
            assert {call.name for turn in calls for call in turn} == {gold_tool(tools)}
            prompt = encode_record(loaded, record, video, think=False, tools=runner.schemas())
            limits = MultiTurnLimits(len(turns), 4096, calls_per_turn)
            row = forced_trajectory(loaded, prompt, context, runner, turns, limits)
            assert (row.calls, row.errors, row.truncated) == (sum(calls_by_turn), 0, False)
            assert builtin_score(record, row.text, RewardConfig()).components["task"] == 1.0
    finally:
        runner.close()


def test_the_answer_twice_target_scores_every_term(records):
    config = RewardConfig(mode="videoauto_r1")
    for record in records:
        found = answer_twice.score(record, answer_twice.gold_response(record), config)
        assert (found["format"], found["answer1"], found["answer2"]) == (1.0, 1.0, 1.0)


def test_the_config_names_exactly_the_tools_with_a_gold_plan():
    from videorl.config.sections import GOLD_TOOLS
    from videorl.rollout.tools.gold import GOLD_PLANS

    assert tuple(GOLD_PLANS) == GOLD_TOOLS


def test_the_gold_selection_earns_framethinkers_per_turn_reward(tiny_model_dir, records):
    """The gold select_frames turn thinks the range it selects, so FrameThinker's reward
    (rewards/framethinker.py) credits its selection bonus to that turn: `algorithm.
    turn_rewards` has a per-action term to spread (0 for every row without the thought)."""
    from videorl.algorithms.turns import TURN_PREFIX
    from videorl.rewards import framethinker

    tools = ["select_frames", "get_frame_number"]
    loaded = load_model(tiny_model_dir(), packing=False)
    runner = ToolRunner(resolve_tools(tools))
    videos = VideoCache(PROMPT_VIDEO)
    try:
        for record in records:
            video = videos.get(record.media)
            context = ToolContext(media=record.media, video=video, config=PROMPT_VIDEO)
            turns = gold_turns(record, video, True, context.limits, True, tools)
            assert turns[0].startswith("<think>") and "<tool_call>" in turns[0]
            prompt = encode_record(loaded, record, video, think=True, tools=runner.schemas())
            limits = MultiTurnLimits(len(turns), 4096, 4)
            row = forced_trajectory(loaded, prompt, context, runner, turns, limits)
            found = framethinker.score(record, turns[-1], RewardConfig(), row.calls_made())
            assert (found["format"], found["task"]) == (1.0, 1.0)
            select_term = found[f"{TURN_PREFIX}1"]
            assert select_term == pytest.approx(framethinker.SELECT_BONUS / framethinker.MAX_REWARD)
            assert select_term > 0 and found[f"{TURN_PREFIX}2"] > 0  # the action, the answer
    finally:
        runner.close()


def test_only_the_select_frames_turn_gets_a_thought():
    from videorl.rollout.tools.gold import select_thought

    selecting = [("select_frames", {"start_frame": 3, "end_frame": 40})]
    assert select_thought(selecting) == "<think>I choose frames 3 to 40.</think>\n"
    assert select_thought([("crop_video", {"start_time": 0, "end_time": 4})]) == ""
    assert select_thought([("get_clip", {"start": 0, "end": 8, "fps": 2})]) == ""
