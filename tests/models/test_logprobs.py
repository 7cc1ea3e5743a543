"""Per-token log-probs: batching with left/right padding equals one row at a time."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from tests.models.test_tiny import fake_video
from videorl.models.batching import plan_microbatches
from videorl.models.generate import SamplingParams, generate
from videorl.models.inputs import collate, encode_prompt
from videorl.models.loading import load_model
from videorl.models.logprobs import response_logprobs


@pytest.mark.parametrize("arch", ["qwen2_5_vl", "qwen3_vl", "qwen3"])
def test_batched_logprobs_equal_unbatched(tiny_model_dir, arch):
    torch.manual_seed(1)
    loaded = load_model(tiny_model_dir(arch))
    video = (lambda: fake_video()) if arch != "qwen3" else (lambda: None)
    prompts = [
        encode_prompt(loaded, "When does the red square appear in the video?", video=video()),
        encode_prompt(loaded, "Hi", video=video()),
    ]
    responses = [torch.tensor(r) for r in ([5, 9, 11, 30, 2], [7, 3], [40, 41, 42])]
    rows = [prompts[0], prompts[1], prompts[1]]
    inputs, mask = collate(rows, responses, loaded.pad_token_id)
    assert inputs["input_ids"][1, 0] == loaded.pad_token_id  # left padding of the short prompt
    assert mask.sum(1).tolist() == [5, 2, 3]  # right padding of short responses
    with torch.no_grad():
        batched, _ = response_logprobs(
            loaded.model, inputs, inputs["input_ids"][:, -mask.shape[1] :]
        )
        for i, (prompt, response) in enumerate(zip(rows, responses, strict=True)):
            one, _ = collate([prompt], [response], loaded.pad_token_id)
            single, _ = response_logprobs(loaded.model, one, response[None])
            torch.testing.assert_close(batched[i, : response.numel()], single[0], atol=1e-5, rtol=0)


def test_sampling_logprobs_match_recomputed(tiny_model_dir):
    torch.manual_seed(0)
    loaded = load_model(tiny_model_dir("qwen2_5_vl"))
    prompt = encode_prompt(loaded, "When?", video=fake_video())
    (gen,) = generate(
        loaded, [prompt], SamplingParams(n=2, max_new_tokens=6, temperature=0.8, logprobs=True)
    )
    inputs, mask = collate([prompt, prompt], gen.token_ids, loaded.pad_token_id)
    with torch.no_grad():
        logp, _ = response_logprobs(
            loaded.model, inputs, inputs["input_ids"][:, -mask.shape[1] :], temperature=0.8
        )
    for i in range(2):
        n = gen.token_ids[i].numel()
        torch.testing.assert_close(logp[i, :n], gen.logprobs[i], atol=1e-4, rtol=0)


@pytest.mark.parametrize("share_prefill", [False, True])
def test_recording_logprobs_leaves_the_draws_and_ignores_top_p(tiny_model_dir, share_prefill):
    """The recorder sees the raw logits: the same tokens are drawn with and without it, and
    under top-p / top-k its log-probs are the policy's at the temperature (what the
    training forward computes), not the truncated sampling distribution's."""
    loaded = load_model(tiny_model_dir("qwen2_5_vl"))
    assert loaded.banned_token_ids  # the vision placeholders: banned before the warpers
    prompt = encode_prompt(loaded, "When?", video=fake_video())
    params = SamplingParams(n=3, max_new_tokens=8, temperature=0.7, top_p=0.9, top_k=20)
    draws = []
    for logprobs in (False, True):
        torch.manual_seed(3)
        (gen,) = generate(
            loaded, [prompt], replace(params, logprobs=logprobs), share_prefill=share_prefill
        )
        draws.append(gen)
    assert [t.tolist() for t in draws[0].token_ids] == [t.tolist() for t in draws[1].token_ids]
    gen = draws[1]
    inputs, mask = collate([prompt] * 3, gen.token_ids, loaded.pad_token_id)
    with torch.no_grad():
        logp, _ = response_logprobs(
            loaded.model, inputs, inputs["input_ids"][:, -mask.shape[1] :], temperature=0.7
        )
    for i in range(3):
        n = gen.token_ids[i].numel()
        assert gen.logprobs[i].shape == (n,)
        torch.testing.assert_close(logp[i, :n], gen.logprobs[i], atol=1e-4, rtol=0)


def test_chunked_logprobs_gradients_match_unchunked(tiny_model_dir):
    loaded = load_model(tiny_model_dir("qwen3"))
    prompt = encode_prompt(loaded, "Compute 3 + 4.")
    response = torch.arange(10, 30)
    inputs, _ = collate([prompt], [response], loaded.pad_token_id)
    grads = []
    for chunk in (1024, 3):
        loaded.model.zero_grad()
        logp, _ = response_logprobs(loaded.model, inputs, response[None], chunk=chunk)
        logp.sum().backward()
        grads.append(loaded.model.get_output_embeddings().weight.grad.clone())  # type: ignore[operator]  # nn.Module types attributes as Tensor | Module
    torch.testing.assert_close(grads[0], grads[1], atol=1e-5, rtol=1e-4)


def test_microbatches_respect_token_budget():
    lengths = [10, 50, 20, 20, 90, 5, 200]
    batches = plan_microbatches(lengths, token_budget=100)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    for batch in batches:
        padded = len(batch) * max(lengths[i] for i in batch)
        assert padded <= 100 or len(batch) == 1
    assert [6] in batches  # longer than the budget: alone
