"""FrameThinker's reward split by turn (`videorl.rewards.framethinker`) and its
select-frame tools (`rollout/tools/framethinker.py`)."""

from __future__ import annotations

import pytest

from tests.rewards.factories import make
from tests.video.conftest import index_frames
from videorl.rewards import RewardConfig
from videorl.rewards.calls import ToolCallMade
from videorl.rewards.framethinker import MAX_REWARD, score
from videorl.rollout.tools import ToolCall, ToolContext, ToolRunner, resolve_tools
from videorl.video.decode import VideoConfig, decode_video
from videorl.video.encode import write_mp4
from videorl.video.media import MediaRef

CONFIG = RewardConfig(num_workers=1)
FINAL = "<think>the frames show a dog</think><answer>B</answer>"


def select(a, b, turn, thought=None):
    text = f"<think>look between {a} and {b}</think>" if thought is None else thought
    args = {"start_frame": a, "end_frame": b}
    return ToolCallMade("select_frames", args, turn=turn, turn_text=text)


def ask_time(time, turn):
    return ToolCallMade("get_frame_number", {"time": time}, turn=turn, turn_text="<think>t</think>")


def _record(question="What runs past at 0:05?"):
    return make("video_qa", {"letter": "B"}, problem=question, extra={"fps": 10})


def test_each_part_of_the_reward_goes_to_the_turn_that_earned_it():
    calls = (ask_time("0:05", 1), select(40, 60, 2))  # frame 50 lies in [40, 60]
    parts = score(_record(), FINAL, CONFIG, calls)
    assert parts["overall"] == pytest.approx(1.52 / MAX_REWARD)
    assert parts["turn/1"] == pytest.approx(0.5 / MAX_REWARD)  # the time query
    assert parts["turn/2"] == pytest.approx(0.02 / MAX_REWARD)  # the first selection
    assert parts["turn/3"] == pytest.approx(1.0 / MAX_REWARD)  # the answer
    wrong = score(_record(), FINAL.replace(">B<", ">C<"), CONFIG, calls)
    assert wrong["overall"] == 0.0 and wrong["format"] == 1.0


@pytest.mark.parametrize(
    "calls",
    [
        (select(0, 20, 1), select(0, 20, 2)),  # a repeated range
        (select(0, 20, 1), select(1, 19, 2)),  # the inner range of an earlier one
        (select(0, 20, 1, thought="<think>look between 0 and 30</think>"),),  # think != action
        (ask_time("0:05", 1), select(0, 20, 2)),  # the asked frame 50 is not selected
        (ask_time("0:05", 1),),  # a time query never followed up
        (select(0, 20, 1), select(30, 50, 1)),  # two calls in one turn
    ],
)
def test_a_broken_consistency_rule_scores_zero(calls):
    assert score(_record(), FINAL, CONFIG, calls)["overall"] == 0.0


def test_select_frames_returns_frames_strictly_inside_the_range(tmp_path):
    path = write_mp4(tmp_path / "v.mp4", index_frames(80, 64, 96), 8)
    config = VideoConfig(min_pixels=4, max_pixels=256 * 256, factor=2, fps=0.25, min_frames=2)
    ctx = ToolContext(
        media=MediaRef(path=str(path)), video=decode_video(path, config), config=config
    )
    runner = ToolRunner(
        resolve_tools(["select_frames", "get_frame_number"], ["videorl.rollout.tools.framethinker"])
    )
    outcome = runner.run(ToolCall("", "select_frames", {"start_frame": 10, "end_frame": 40}), ctx)
    assert outcome.ok, outcome.error
    numbers = [int(line.split()[1].rstrip(":")) for line in outcome.text.splitlines()]
    assert len(numbers) == len(outcome.media) == 8 and min(numbers) > 10 and max(numbers) < 40
    narrow = runner.run(ToolCall("", "select_frames", {"start_frame": 10, "end_frame": 18}), ctx)
    assert "more than 8 frames" in (narrow.error or "")
    time = runner.run(ToolCall("", "get_frame_number", {"time": "0:05"}), ctx)
    assert time.text == "Frame number at time 0:05 is: 40."
    runner.close()
