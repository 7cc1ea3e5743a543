"""FrameThinker's reward as a reward plug-in, split by model turn for `algorithm.turn_rewards`
(`configs/framethinker.yaml`, docs/methods/framethinker.md).

FrameThinker (lcqysl/FrameThinker-RL, `verl/utils/reward_score/think_with_video_reward.py:
v11`) scores a trajectory `acc + other`, and 0 for any trajectory that breaks its
cognitive-consistency rules. Read here from the calls (`select_frames`,
`get_frame_number`, `rollout/tools/framethinker.py`) and each calling turn's text:

- every calling turn holds one call and a `<think>` block; no call failed (FrameThinker
  ends the episode on an invalid action, which then has no answer);
- a `select_frames` pair is not repeated (nor `(a + 1, b - 1)` of an earlier pair), and the
  last two integers of its turn's `<think>` (not preceded or followed by `:`) are `a, b`;
- a `get_frame_number` time is not repeated, and the next call is a `select_frames` whose
  range holds the frame number it answered;
- the final turn has `<think>` and `<answer>X</answer>`;
- `acc` = 1 when the answer is the ground truth; only then `other` = +0.5 when a time query
  returned a frame > 0 and the question holds a time (`\\d+:\\d+`), +0.02 when frames were
  selected.

`overall` = `(acc + other) / 1.52` (FrameThinker's largest reward, so that it lies in [0, 1]);
the components `turn/<t>` split it by the turn that earned each part: the time bonus to the
turn of that query, the selection bonus to the first selecting turn, `acc` to the final turn.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from videorl.algorithms.turns import TURN_PREFIX
from videorl.data.records import TaskRecord
from videorl.rewards.calls import ToolCallMade
from videorl.rewards.config import RewardConfig
from videorl.rewards.registry import FAMILY_REWARDS

MAX_REWARD = 1.52  # acc 1 + time bonus 0.5 + selection bonus 0.02
TIME_BONUS, SELECT_BONUS = 0.5, 0.02
_THINK = re.compile(r"<think>(.*?)</think>", re.DOTALL)
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
_NUMBER = re.compile(r"(?<!:)\b(\d+)\b(?!:)")
_TIME = re.compile(r"\d+:\d+(:\d+)?")


def _thought_pair(turn_text: str) -> tuple[int, int] | None:
    thoughts = _THINK.findall(turn_text)
    numbers = _NUMBER.findall(thoughts[-1]) if thoughts else []
    return (int(numbers[-2]), int(numbers[-1])) if len(numbers) >= 2 else None


def consistent(calls: Sequence[ToolCallMade], answered: Mapping[int, int]) -> bool:
    """FrameThinker's rules on the calls (module docstring); `answered[i]` is the frame
    number call i's `get_frame_number` returned."""
    per_turn = [call.turn for call in calls]
    if len(set(per_turn)) != len(per_turn) or any(not call.ok for call in calls):
        return False
    pairs: set[tuple[int, int]] = set()
    times: set[str] = set()
    expected: int | None = None
    for index, call in enumerate(calls):
        if call.name == "select_frames":
            pair = (int(call.arguments["start_frame"]), int(call.arguments["end_frame"]))
            if expected is not None and not pair[0] <= expected <= pair[1]:
                return False
            if pair in pairs or _thought_pair(call.turn_text) != pair:
                return False
            pairs |= {pair, (pair[0] + 1, pair[1] - 1)}
            expected = None
        elif call.name == "get_frame_number":
            time = str(call.arguments["time"])
            if expected is not None or time in times or index not in answered:
                return False
            times.add(time)
            expected = answered[index]
        else:
            return False
    return expected is None


def score(
    record: TaskRecord,
    response: str,
    config: RewardConfig,
    calls: Sequence[ToolCallMade] = (),
    answered: Mapping[int, int] | None = None,
) -> Mapping[str, Any]:
    """`format`, `task` (acc), `overall` and `turn/<t>`; `answered` (call index -> frame
    number) defaults to the numbers the calls' results stated (`frame_numbers_answered`)."""
    final_turn = max((call.turn for call in calls), default=0) + 1
    zero: dict[str, float] = {"format": 0.0, "task": 0.0, "overall": 0.0}
    answer = _ANSWER.findall(response)
    answered = dict(answered if answered is not None else frame_numbers_answered(record, calls))
    if not _THINK.search(response) or len(answer) != 1 or not consistent(calls, answered):
        return zero
    task = FAMILY_REWARDS[record.family].score(record, answer[0].strip(), config)["task"]
    acc = 1.0 if float(task) >= 1.0 else 0.0
    turns = {final_turn: acc}
    if acc:
        question = str(record.extra.get("question") or record.problem)
        timed = [
            call.turn
            for i, call in enumerate(calls)
            if call.name == "get_frame_number" and answered.get(i, 0) > 0
        ]
        if timed and _TIME.search(question):
            turns[timed[0]] = turns.get(timed[0], 0.0) + TIME_BONUS
        selecting = [call.turn for call in calls if call.name == "select_frames"]
        if selecting:
            turns[selecting[0]] = turns.get(selecting[0], 0.0) + SELECT_BONUS
    total = sum(turns.values())
    parts = {f"{TURN_PREFIX}{turn}": value / MAX_REWARD for turn, value in sorted(turns.items())}
    return {"format": 1.0, "task": acc, "overall": total / MAX_REWARD, **parts}


def frame_numbers_answered(record: TaskRecord, calls: Sequence[ToolCallMade]) -> dict[int, int]:
    """The frame number each successful `get_frame_number` call returned: `int(seconds *
    fps)` of the time asked, at the record's `extra.fps` (its video's frame rate; FrameThinker's
    rows carry it), else 1 fps."""
    fps = float(record.extra.get("fps", 1.0))
    found = {}
    for index, call in enumerate(calls):
        if call.name == "get_frame_number" and call.ok:
            minutes, _, seconds = str(call.arguments.get("time", "")).partition(":")
            if minutes.isdigit() and seconds.isdigit():
                found[index] = int((int(minutes) * 60 + int(seconds)) * fps)
    return found
