"""Rows of one prompt share its forward: same log-probs, entropies and gradients as padded rows."""

from __future__ import annotations

import pytest
import torch

from tests.models.test_tiny import fake_video
from videorl.models.inputs import encode_prompt
from videorl.models.loading import load_model
from videorl.models.logprobs import rows_logprobs
from videorl.models.shared_prompt import enable_shared_prompts, share_prompt_unsupported_reason
from videorl.models.visual_cache import VisualEmbeddingCache


def _rows(loaded, arch):
    video = (lambda: fake_video()) if arch != "qwen3" else (lambda: None)
    prompts = [
        encode_prompt(loaded, "When does the red square appear in the video?", video=video()),
        encode_prompt(loaded, "Hi", video=video()),
    ]
    torch.manual_seed(0)
    responses = [torch.randint(5, 300, (n,)) for n in (5, 2, 7, 3, 1)]
    return [prompts[0], prompts[1], prompts[0], prompts[1], prompts[1]], responses


def _logprobs_and_grads(loaded, rows, responses):
    loaded.model.zero_grad()
    logp, entropy, mask = rows_logprobs(loaded, rows, responses, temperature=0.9)
    (logp * mask).sum().backward()
    grads = {n: p.grad.clone() for n, p in loaded.model.named_parameters() if p.grad is not None}
    return logp * mask, entropy * mask, grads


@pytest.mark.parametrize(
    ("arch", "packing", "cache"),
    [("qwen2_5_vl", False, False), ("qwen2_5_vl", True, True), ("qwen3_vl", False, True)]
    + [("qwen3", False, False)],
)
def test_shared_prompt_forward_equals_rows(tiny_model_dir, arch, packing, cache):
    loaded = load_model(tiny_model_dir(arch), attn_implementation="sdpa_varlen", packing=packing)
    rows, responses = _rows(loaded, arch)
    decoder = getattr(loaded.model.model, "language_model", loaded.model.model)
    widths = []

    def hook(_module, _args, kwargs):
        x = kwargs.get("inputs_embeds")
        widths.append(tuple((x if x is not None else kwargs["input_ids"]).shape[:2]))

    handle = decoder.register_forward_pre_hook(hook, with_kwargs=True)
    results = {}
    for share in (False, True):
        loaded.share_prompts = share
        loaded.visual_cache = VisualEmbeddingCache(loaded.model) if cache else None
        widths.clear()
        results[share] = _logprobs_and_grads(loaded, rows, responses)
        if share:  # one forward of the 2 distinct prompts, one of the 5 responses
            assert [w[0] for w in widths] == [2, 5] and widths[1][1] == 7
    handle.remove()
    (logp, entropy, grads), (logp_s, entropy_s, grads_s) = results[False], results[True]
    torch.testing.assert_close(logp_s, logp, atol=1e-5, rtol=0)
    torch.testing.assert_close(entropy_s, entropy, atol=1e-5, rtol=0)
    assert grads_s.keys() == grads.keys()
    for name, grad in grads.items():
        torch.testing.assert_close(grads_s[name], grad, atol=1e-5, rtol=1e-4, msg=name)


def test_unsupported_models_take_the_plain_path(tiny_model_dir):
    hybrid = load_model(tiny_model_dir("qwen3_5"))
    assert "linear-attention" in share_prompt_unsupported_reason(hybrid.model)  # type: ignore[operator]  # set here: a None fails the test too
    plain = load_model(tiny_model_dir("qwen3"))
    assert share_prompt_unsupported_reason(plain.model) is None
    plain.model.gradient_checkpointing_enable()  # type: ignore[operator]  # nn.Module types attributes as Tensor | Module
    enable_shared_prompts(True, hybrid, plain, None)
    assert not hybrid.share_prompts and not plain.share_prompts
