"""Text math: the final boxed answer checked for equivalence with math-verify."""

import pytest

from tests.rewards.factories import make
from videorl.rewards import RewardConfig, score_response

CONFIG = RewardConfig(num_workers=1)


@pytest.mark.parametrize(
    "reference, response, expected",
    [
        ("\\frac{1}{2}", "So the answer is \\boxed{0.5}.", 1.0),
        ("\\frac{1}{2}", "\\boxed{\\dfrac{1}{2}}", 1.0),
        ("x^2+1", "\\boxed{1 + x^2}", 1.0),
        ("42", "First \\boxed{41}, no: \\boxed{42}", 1.0),
        ("42", "\\boxed{41}", 0.0),
        ("42", "The answer is 42.", 0.0),
        ("42", "\\boxed{42", 0.0),
        ("42", "\\boxed{}", 0.0),
    ],
)
def test_equivalence(reference, response, expected):
    assert score_response(make("math", {"text": reference}), response, CONFIG).overall == expected


def test_think_block_for_math():
    record = make("math", {"text": "3"})
    think = RewardConfig(num_workers=1, think_required=True)
    assert score_response(record, "<think>1+2</think>\n\\boxed{3}", think).overall == 1.0
    assert score_response(record, "\\boxed{3}", think).overall == 0.0
    assert score_response(record, "<think>\\boxed{3}</think> so", CONFIG).overall == 0.0
