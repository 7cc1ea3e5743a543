"""Confidence-gated early exit (VideoAuto-R1, issue 49 item 4): a confident a1 stops the
row there, with the full run's a1; an unconfident one runs to the end, as the full run.

A logits processor scripts the tiny model: each step it allows only the script's next token
(greedy picks it) and, to make a step unconfident, one rival token with probability
1 - `p`. The gate reads the same processed scores, so a1's confidence is the product of the
script's probabilities, known in advance.
"""

from __future__ import annotations

import math
from collections.abc import Collection

import pytest
import torch
from transformers import LogitsProcessor

from videorl.models.generate import SamplingParams
from videorl.models.inputs import encode_prompt
from videorl.models.loading import load_model
from videorl.rollout.early_exit import (
    PUBLISHED_THRESHOLD,
    first_answer_span,
    generate_with_early_exit,
)

FULL = "\\boxed{B}<think>the dog runs to the left of the frame, so B</think>\\boxed{B}"


class Script(LogitsProcessor):
    """Force `ids` one per step; the step that writes `weak` (a token index) gets prob `p`."""

    def __init__(self, ids: list[int], weak: Collection[int] = frozenset(), p: float = 1.0) -> None:
        self.ids, self.weak, self.p, self.steps, self.start = ids, weak, p, 0, None

    def __call__(self, input_ids, scores):
        if self.start is None:
            self.start = input_ids.shape[1]
        t = input_ids.shape[1] - self.start
        self.steps += 1
        forced = torch.full_like(scores, -math.inf)
        want = self.ids[min(t, len(self.ids) - 1)]
        forced[:, want] = 0.0
        if t in self.weak:  # a rival with probability 1 - p
            rival = (want + 1) % scores.shape[-1]
            forced[:, rival] = math.log((1 - self.p) / self.p)
        return forced


@pytest.fixture(scope="module")
def setup(tiny_model_dir):
    torch.manual_seed(0)
    loaded = load_model(tiny_model_dir("qwen2_5_vl"))
    prompt = encode_prompt(loaded, "Which animal runs? A. cat B. dog")
    ids = loaded.tokenizer(FULL, add_special_tokens=False)["input_ids"] + [loaded.eos_token_ids[0]]
    return loaded, prompt, ids


def run(loaded, prompt, script, threshold):
    params = SamplingParams(n=1, max_new_tokens=len(script.ids) + 8, temperature=0.0)
    [gen], [[found]] = generate_with_early_exit(
        loaded, [prompt], params, threshold, logits_processor=[script]
    )
    text = loaded.tokenizer.decode(gen.token_ids[0], skip_special_tokens=True)
    return text, found, script.steps


def letter_index(loaded, ids):
    """The index of the token that writes a1's letter."""
    for i in range(len(ids)):
        text = loaded.tokenizer.decode(ids[: i + 1])
        if "B" in text:  # "\\boxed{" has no capital B
            return i
    raise AssertionError("no B token")


def test_confident_first_answer_stops_with_the_full_runs_first_answer(setup):
    loaded, prompt, ids = setup
    full, never, full_steps = run(loaded, prompt, Script(ids), threshold=2.0)
    assert full == FULL and not never.exited
    text, found, steps = run(loaded, prompt, Script(ids), PUBLISHED_THRESHOLD)
    assert found.exited and found.confidence == pytest.approx(1.0)
    assert text == full.split("<think>")[0] == "\\boxed{B}"
    # it really stopped: a1's tokens only, a few forward steps instead of the whole response
    assert found.tokens == len(
        loaded.tokenizer("\\boxed{B}", add_special_tokens=False)["input_ids"]
    )
    assert steps == found.tokens < full_steps == len(ids)


def test_unconfident_first_answer_runs_to_the_end_as_the_full_run(setup):
    loaded, prompt, ids = setup
    weak = {letter_index(loaded, ids)}
    full, _, _ = run(loaded, prompt, Script(ids, weak, p=0.6), threshold=2.0)
    text, found, steps = run(loaded, prompt, Script(ids, weak, p=0.6), PUBLISHED_THRESHOLD)
    assert not found.exited and found.confidence == pytest.approx(0.6, abs=1e-4)
    assert text == full == FULL and steps == len(ids)
    # the same a1 clears a lower bar
    text, found, _ = run(loaded, prompt, Script(ids, weak, p=0.6), 0.5)
    assert found.exited and text == "\\boxed{B}"


def test_fallback_and_think_first_never_exit(setup):
    loaded, prompt, _ = setup
    for response in (
        "\\boxed{Let's analyze the problem step by step.}<think>x</think>\\boxed{B}",
        "<think>x</think>\\boxed{B}",
    ):
        ids = loaded.tokenizer(response, add_special_tokens=False)["input_ids"]
        ids += [loaded.eos_token_ids[0]]
        text, found, _ = run(loaded, prompt, Script(ids), threshold=0.0)
        assert text == response and not found.exited and found.confidence is None


@pytest.mark.parametrize(
    "text, expected",
    [
        ("\\boxed{B", None),
        ("\\boxed{(B)}", (8, 9)),
        ("\\boxed{B.}<think>", (7, 8)),
        ("\\boxed{a dog}", (7, 12)),
        ("\\boxed{\\frac{1}{2}}", (7, 18)),
        ("<think>", False),
        ("\\boxed{}", False),
        ("\\boxed{Let's analyze the problem}", False),
        ("x" * 600, False),
        ("some words", None),
    ],
)
def test_first_answer_span(text, expected):
    assert first_answer_span(text) == expected
