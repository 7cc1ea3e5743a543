"""Confidence-gated early exit of "think once, answer twice" responses (VideoAuto-R1,
docs/fidelity.md#videoauto-r1-configsvideoauto_r1yaml).

A response reads `\\boxed{a1}<think>...</think>\\boxed{a2}`. Generation watches each row
until its first box closes; when the confidence of a1 is at least the threshold the row stops
there, answering a1 without thinking; otherwise it goes on to the end and answers a2.

Confidence, as IVUL-KAUST/VideoAuto-R1 `lmms_eval/models/simple/early_exit.py`
(`compute_first_boxed_answer_probs`): the geometric mean of the probabilities of a1's
tokens, `exp(mean_t log p(token_t))`, under the distribution each token was drawn from (the
processed scores of that step: greedy logits with banned tokens removed), over the tokens of
a1 normalised to its option letter (`(B)`, `B.`, `B:` -> `B`; other answers whole). An a1
that starts with `Let's analyze` (the fallback the system prompt offers) has no confidence
and never exits; so does a row whose `<think>` comes before any box.

It is the same `generate` call as the full run, stopped early for a confident row, so its
tokens are the full run's first tokens: with greedy decoding the exited answer is the a1 of
the full response. The published inference generates every response whole and then picks a1
or a2; here a confident row really stops (`Exit.tokens` counts what was generated).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from transformers import (
    LogitsProcessor,
    LogitsProcessorList,
    StoppingCriteria,
    StoppingCriteriaList,
)

from videorl.models.generate import Generation, SamplingParams, generate
from videorl.models.inputs import PromptEncoding
from videorl.models.loaded import LoadedModel
from videorl.rewards.answer_twice import FALLBACK_PREFIX, THINK_OPEN

PUBLISHED_THRESHOLD = 0.97  # eval_qwen2_5_vl_auto_16k.sh: early_exit_thresh=0.97
MAX_FIRST_ANSWER_CHARS = 512  # a row without a closed first box by then never exits
_OPEN = "\\boxed{"
# early_exit.py `normalize_text`: an option letter in any of these shapes counts as the letter
_CHOICE = (
    re.compile(r"^\s*[\(\[\{]\s*([A-Za-z])\s*[\)\]\}]\s*(?:[.)/:;\-]\s*)?"),
    re.compile(r"^\s*([A-Za-z])\s*[.)/:;\-]\s*"),
    re.compile(r"^\s*([A-Za-z])\s*[.]?\s*$"),
)


@dataclass(frozen=True)
class Exit:
    """What the gate decided for one generated row."""

    exited: bool  # stopped after a1
    confidence: float | None  # of a1; None: no a1 (fallback, think first, no box)
    tokens: int  # tokens generated (EOS included when the row ended on it)


def first_answer_span(text: str) -> tuple[int, int] | bool | None:
    """Where a1's (normalised) answer sits in `text`, the response so far: `(start, end)`
    characters once its first box has closed; False when the row cannot exit (think before a
    box, the fallback answer, an over-long head); None while undecided."""
    head = text.split(THINK_OPEN)[0]
    start = head.find(_OPEN)
    if start < 0:
        return False if THINK_OPEN in text or len(text) > MAX_FIRST_ANSWER_CHARS else None
    first, depth = start + len(_OPEN), 1
    for at in range(first, len(head)):
        depth += {"{": 1, "}": -1}.get(head[at], 0)
        if depth == 0:
            content = head[first:at]
            if content.lstrip().startswith(FALLBACK_PREFIX):
                return False
            for pattern in _CHOICE:
                if (match := pattern.match(content)) is not None:
                    return first + match.start(1), first + match.end(1)
            return (first, at) if content.strip() else False
    return False if THINK_OPEN in text or len(text) > MAX_FIRST_ANSWER_CHARS else None


def span_confidence(
    tokenizer: Any, ids: Sequence[int], logprobs: Sequence[float], span: tuple[int, int]
) -> float:
    """`exp(mean log p)` over the tokens whose text overlaps characters `span` of the
    decoded `ids` (each token's characters: the growth of the decoded prefix)."""
    ends = [
        len(tokenizer.decode(list(ids[: i + 1]), skip_special_tokens=True)) for i in range(len(ids))
    ]
    starts = [0, *ends[:-1]]
    chosen = [
        lp for s, e, lp in zip(starts, ends, logprobs, strict=False) if e > span[0] and s < span[1]
    ]
    return math.exp(sum(chosen) / len(chosen)) if chosen else 0.0


class _Recorder(LogitsProcessor):
    """Placed last among the logits processors: keeps each step's log-probabilities for the
    gate and changes nothing."""

    def __init__(self, gate: FirstAnswerGate) -> None:
        self.gate = gate

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        self.gate.record(input_ids, scores)
        return scores


class FirstAnswerGate(StoppingCriteria):
    """Stops a row once its a1 is confident enough; `recorder` gives it each step's
    log-probabilities, it reads the chosen token's."""

    def __init__(self, tokenizer: Any, threshold: float) -> None:
        self.tokenizer = tokenizer
        self.threshold = threshold
        self.recorder = _Recorder(self)
        self.prompt_len: int | None = None
        self._step: torch.Tensor | None = None
        self.logprobs: list[list[float]] = []
        self.decisions: list[Exit | None] = []

    def record(self, input_ids: torch.Tensor, scores: torch.Tensor) -> None:
        if self.prompt_len is None:
            self.prompt_len = input_ids.shape[1]
            self.logprobs = [[] for _ in range(input_ids.shape[0])]
            self.decisions = [None] * input_ids.shape[0]
        self._step = torch.log_softmax(scores.float(), dim=-1)

    def __call__(
        self, input_ids: torch.LongTensor, _scores: Any, **_kwargs: Any
    ) -> torch.BoolTensor:
        return self._decide(input_ids)  # type: ignore[return-value]

    def _decide(self, input_ids: torch.Tensor) -> torch.Tensor:
        step, self._step = self._step, None
        assert step is not None and self.prompt_len is not None
        chosen = step.gather(-1, input_ids[:, -1:].to(step.device)).squeeze(-1).tolist()
        stop = torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
        for row, logprob in enumerate(chosen):
            decided = self.decisions[row]
            if decided is not None:
                stop[row] = decided.exited
                continue
            self.logprobs[row].append(logprob)
            ids = input_ids[row, self.prompt_len :].tolist()
            span = first_answer_span(self.tokenizer.decode(ids, skip_special_tokens=True))
            if span is None:
                continue
            if isinstance(span, bool):
                self.decisions[row] = Exit(False, None, 0)
                continue
            confidence = span_confidence(self.tokenizer, ids, self.logprobs[row], span)
            exited = confidence >= self.threshold
            self.decisions[row] = Exit(exited, confidence, len(ids))
            stop[row] = exited
        return stop


def generate_with_early_exit(
    loaded: LoadedModel,
    prompts: Sequence[PromptEncoding],
    params: SamplingParams,
    threshold: float,
    *,
    logits_processor: Sequence[Any] = (),
) -> tuple[list[Generation], list[list[Exit]]]:
    """`generate`, each row stopping after a1 when its confidence is >= `threshold`: the
    generations (an exited row's tokens end with a1's box) and each row's `Exit`.
    `logits_processor` run before the gate (tests script a model with them)."""
    gate = FirstAnswerGate(loaded.tokenizer, threshold)
    hf_kwargs = {
        "logits_processor": LogitsProcessorList([*logits_processor, gate.recorder]),
        "stopping_criteria": StoppingCriteriaList([gate]),
    }
    gens = generate(loaded, prompts, params, hf_kwargs=hf_kwargs)
    runs = 1 if params.temperature <= 0 else params.n  # rows generate() ran per prompt
    out, exits = [], []
    for p, gen in enumerate(gens):
        ids, lps, cut, found = [], [], [], []
        for k, tokens in enumerate(gen.token_ids):
            row = p * runs + (k if runs > 1 else 0)
            decided = gate.decisions[row] if row < len(gate.decisions) else None
            lp = gen.logprobs[k] if gen.logprobs else torch.zeros(0)
            if decided is not None and decided.exited:  # cut the padding after a1
                ids.append(tokens[: decided.tokens])
                lps.append(lp[: decided.tokens])
                cut.append(False)
                found.append(decided)
                continue
            ids.append(tokens)
            lps.append(lp)
            cut.append(gen.truncated[k])
            confidence = decided.confidence if decided is not None else None
            found.append(Exit(False, confidence, int(tokens.numel())))
        out.append(Generation(ids, lps, cut))
        exits.append(found)
    return out, exits
