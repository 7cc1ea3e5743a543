"""Video QA: one option letter, exact match."""

import pytest

from tests.rewards.factories import make
from videorl.rewards import RewardConfig, score_response
from videorl.rewards.payload import parse_letter

CONFIG = RewardConfig(num_workers=1)


@pytest.mark.parametrize(
    "payload", ["B", " B ", "(B)", "B.", "B)", "B:", "B. dog", "(B) dog", "B) dog"]
)
def test_letter_forms(payload):
    assert parse_letter(payload) == "B"


@pytest.mark.parametrize(
    "payload", ["", "b", "A or B", "AB", "I", "Bdog", "the answer is B", "[B]"]
)
def test_not_a_letter(payload):
    assert parse_letter(payload) is None


def test_exact_match():
    record = make("video_qa", {"letter": "C"})
    assert score_response(record, "<answer>C</answer>", CONFIG).overall == 1.0
    assert score_response(record, "<answer>D</answer>", CONFIG).overall == 0.0
    assert score_response(record, "<answer>A or C</answer>", CONFIG).overall == 0.0
