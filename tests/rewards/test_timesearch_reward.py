"""TimeSearch-R's v7 reward (`rewards/timesearch.py`, issue 49 item 2): 1.0 format + 0.5
accuracy + 0.5 accuracy' x check', halved into [0, 1]; the check is the completeness
check's answer, the row's last call."""

from __future__ import annotations

import pytest

from videorl.rewards import RewardConfig
from videorl.rewards.calls import ToolCallMade, verification_call
from videorl.rewards.timesearch import score

from .factories import all_records

CONFIG = RewardConfig(num_workers=1)
RIGHT = "<think>seen at 2.5</think><answer>2.5 to 7</answer>"
SEARCH = ToolCallMade("seek_video_frames", {"query": "red"}, turn=1)


@pytest.mark.parametrize(
    "response, calls, expected",
    [
        (RIGHT, (SEARCH, verification_call("2.5 to 7")), (1.0 + 0.5 + 0.5) / 2),
        (RIGHT, (SEARCH, verification_call("<answer>2.5 to 7</answer>")), 1.0),
        (RIGHT, (SEARCH, verification_call("I don't know")), (1.0 + 0.5) / 2),
        (RIGHT, (), (1.0 + 0.5) / 2),  # no check ran: no completeness term
        ("<answer>2.5 to 7</answer>", (SEARCH, verification_call("2.5 to 7")), 0.5),  # no think
        (RIGHT, (ToolCallMade("?", ok=False), verification_call("2.5 to 7")), 0.5),  # bad call
        ("<think>x</think><answer>20 to 25</answer>", (verification_call("2.5 to 7"),), 0.5),
    ],
)
def test_v7_terms(response, calls, expected):
    parts = score(all_records()["tg"], response, CONFIG, calls)
    assert parts["overall"] == pytest.approx(expected)


def test_a_partial_accuracy_is_kept_and_a_good_one_raised():
    record = all_records()["tg"]  # window [2.5, 7]
    partial = score(record, "<think>x</think><answer>2.5 to 4</answer>", CONFIG, ())
    assert 0 < partial["task"] < 0.5
    good = score(
        record,
        "<think>x</think><answer>2.5 to 6.5</answer>",
        CONFIG,
        (verification_call("2.5 to 6.5"),),
    )
    assert 0.5 < good["task"] < 1 and good["complete"] == 1.0  # both raised to 1 above 0.5
