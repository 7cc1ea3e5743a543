"""Vision placeholder tokens are never sampled (issue 31, item 7f), against the published
rule.

Published: HVision-NKU/OraRL `verl/workers/rollout/vllm_rollout_spmd.py` lines 51-64
(`_get_logit_bias`, EasyR1's with the video token added): a logit bias of -100 on
`processor.image_token` and `processor.video_token`, passed to every vLLM `SamplingParams`
(its HF rollout, `hf_rollout.py`, has none; nor have TaRO's verl or Video-R1). Ours bans five
tokens outright in both engines: HF `suppress_tokens`, vLLM `allowed_token_ids`
(`models/loaded.py: VISION_TOKENS`, `rollout/vllm_support.py: allowed_token_ids`).
"""

from __future__ import annotations

import math

import pytest
import torch

from videorl.models.loaded import VISION_TOKENS
from videorl.models.loading import load_model
from videorl.rollout.vllm_support import allowed_token_ids


def orarl_logit_bias(processor) -> dict[int, float] | None:
    """OraRL's `_get_logit_bias` (lines 51-64), restated."""
    if processor is None:
        return None
    bias: dict[int, float] = {}
    for name in ("image_token", "video_token"):
        if hasattr(processor, name):
            bias[processor.tokenizer.convert_tokens_to_ids(getattr(processor, name))] = -100
    return bias or None


def test_ours_bans_what_orarl_biases_and_more(tiny_model_dir):
    loaded = load_model(tiny_model_dir("qwen2_5_vl"))
    bias = orarl_logit_bias(loaded.processor)
    vocab = loaded.tokenizer.get_vocab()
    assert bias is not None
    assert set(bias) == {vocab["<|image_pad|>"], vocab["<|video_pad|>"]}
    assert set(bias) < set(loaded.banned_token_ids)  # plus vision_start / end / pad
    assert {t for t, i in vocab.items() if i in loaded.banned_token_ids} == set(VISION_TOKENS)
    allowed = allowed_token_ids(len(vocab), loaded.banned_token_ids)
    assert not set(allowed) & set(bias) and len(allowed) == len(vocab) - len(VISION_TOKENS)


def test_a_bias_of_minus_100_is_a_ban_in_effect():
    # the placeholder 60 nats above the two other logits: vLLM with OraRL's bias samples it
    # with probability e^(60 - 100) / (e^(60 - 100) + 2) ~ 2.1e-18, ours with 0
    logits = torch.tensor([60.0, 0.0, 0.0])
    biased = torch.softmax(logits + torch.tensor([-100.0, 0.0, 0.0]), dim=-1)
    assert float(biased[0]) == pytest.approx(math.exp(-40) / (2 + math.exp(-40)), rel=1e-5)
    assert float(biased[0]) < 3e-18
    banned = torch.softmax(logits.masked_fill(torch.tensor([True, False, False]), -math.inf), -1)
    assert float(banned[0]) == 0.0
