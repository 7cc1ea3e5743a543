"""The answer protocol (docs/methods.md#answer-protocol): optional think block, exactly one
answer, nothing after."""

import pytest

from videorl.rewards.protocol import extract_boxed, extract_tagged, last_boxed, wrap_tagged


@pytest.mark.parametrize(
    "response, payload",
    [
        ("<answer>B</answer>", "B"),
        ("  <answer> 2 to 3 </answer>\n", " 2 to 3 "),
        ("<think>because</think><answer>B</answer>", "B"),
        ("<think>\nline\n</think>\n\n<answer>B</answer>\n", "B"),
    ],
)
def test_valid_shapes(response, payload):
    found = extract_tagged(response, think_required=False)
    assert found.ok and found.payload == payload


@pytest.mark.parametrize(
    "response",
    [
        "",
        "B",
        "<answer>B",
        "The answer: <answer>B</answer>",
        "<answer>B</answer> because",
        "<answer>A</answer><answer>B</answer>",
        "<answer><answer>B</answer></answer>",
        "<think>a</think><think>b</think><answer>B</answer>",
        "<think>a<answer>B</answer></think>",
        "<answer>B</answer><think>late</think>",
        "x<think>a</think><answer>B</answer>",
        "<think>a</think>text<answer>B</answer>",
        "</answer>B<answer>",
        "<think>unclosed<answer>B</answer>",
    ],
)
def test_invalid_shapes(response):
    assert not extract_tagged(response, think_required=False).ok


def test_think_required():
    assert not extract_tagged("<answer>B</answer>", think_required=True).ok
    assert extract_tagged("<think></think><answer>B</answer>", think_required=True).ok


@pytest.mark.parametrize("think_required", [False, True])
def test_think_opened_by_the_chat_template(think_required):
    """A template that writes `<think>` into the prompt: the response starts inside the
    block (OraRL's parser: optional opening tag)."""
    found = extract_tagged("reasoning\n</think>\n\n<answer>B</answer>", think_required)
    assert found.ok and found.payload == "B"
    assert not extract_tagged("a</think>b</think><answer>B</answer>", think_required).ok
    assert not extract_tagged("<answer>B</answer></think>", think_required).ok


def test_failed_format_keeps_last_answer_for_diagnostics():
    found = extract_tagged("<answer>A</answer><answer>B</answer>", think_required=False)
    assert not found.ok and found.payload == "B"


def test_wrap_round_trip():
    for think in (False, True):
        found = extract_tagged(wrap_tagged("C", think), think_required=think)
        assert found.ok and found.payload == "C"


def test_last_boxed():
    assert last_boxed("so \\boxed{1} then \\boxed{\\frac{a}{b}}.") == "\\frac{a}{b}"
    assert last_boxed("\\boxed{\\{1,2\\}}") == "\\{1,2\\}"
    assert last_boxed("\\boxed {7}") == "7"
    assert last_boxed("\\boxed{unclosed") is None
    assert last_boxed("no box") is None


def test_boxed_protocol():
    assert extract_boxed("Thus \\boxed{3}.", think_required=False).ok
    assert not extract_boxed("Thus \\boxed{3", think_required=False).ok
    assert not extract_boxed("\\boxed{3}", think_required=True).ok
    assert extract_boxed("<think>x</think> \\boxed{3}", think_required=True).payload == "3"
    assert not extract_boxed("<think>\\boxed{3}</think>", think_required=False).ok
