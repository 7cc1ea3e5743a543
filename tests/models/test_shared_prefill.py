"""Shared prefill: each prompt prefilled once for its n samples gives the unshared responses."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from tests.models.test_tiny import fake_video
from videorl.models.generate import HYBRID_PREFILL_FROM as HYBRID
from videorl.models.generate import SamplingParams, generate
from videorl.models.inputs import encode_prompt
from videorl.models.loading import load_model
from videorl.versions import installed_in_range

ARCHS = ["qwen2_5_vl", "qwen3_vl", "qwen3_5", "qwen3"]  # Qwen3.5: linear-attention state too


def _prompts(loaded, arch):
    video = (lambda: fake_video()) if arch != "qwen3" else (lambda: None)
    return [  # two lengths: the short prompt is left-padded
        encode_prompt(loaded, "When does the red square appear in the video?", video=video()),
        encode_prompt(loaded, "Hi", video=video()),
    ]


def _prefill_calls(loaded):
    """Counts forward calls of the decoder with more than one new token (prefills)."""
    decoder = getattr(loaded.model.model, "language_model", loaded.model.model)
    calls = []

    def hook(_module, args, kwargs):
        embeds = kwargs.get("inputs_embeds")
        ids = kwargs.get("input_ids")
        width = (embeds if embeds is not None else ids).shape[1]
        if width > 1:
            calls.append((embeds if embeds is not None else ids).shape[0])

    return calls, decoder.register_forward_pre_hook(hook, with_kwargs=True)


@pytest.mark.parametrize("arch", ARCHS)
def test_shared_prefill_samples_equal_unshared(tiny_model_dir, arch):
    loaded = load_model(tiny_model_dir(arch))
    prompts = _prompts(loaded, arch)
    params = SamplingParams(n=3, max_new_tokens=10, temperature=1.0, top_k=50, logprobs=True)
    outs = []
    for share in (False, True):
        calls, handle = _prefill_calls(loaded)
        torch.manual_seed(7)
        outs.append(generate(loaded, prompts, params, share_prefill=share))
        handle.remove()
        shares = share and (arch != "qwen3_5" or installed_in_range("transformers", HYBRID))
        assert calls == ([2] if shares else [6])  # B prompt rows once, or B*n rows
    distinct = set()
    for unshared, shared in zip(*outs, strict=True):
        for a, b, la, lb in zip(
            unshared.token_ids,
            shared.token_ids,
            *[g.logprobs for g in (unshared, shared)],
            strict=True,
        ):
            assert torch.equal(a, b)
            torch.testing.assert_close(la, lb, atol=1e-4, rtol=0)
            distinct.add(tuple(a.tolist()))
        assert unshared.truncated == shared.truncated
    assert len(distinct) > 1  # really sampled: the comparison is not of n identical rows


@pytest.mark.parametrize("arch", ["qwen2_5_vl", "qwen3_5"])
def test_shared_prefill_greedy_equals_one_sample_per_prompt(tiny_model_dir, arch):
    loaded = load_model(tiny_model_dir(arch))
    prompts = _prompts(loaded, arch)
    params = SamplingParams(n=2, max_new_tokens=10, temperature=0.0)
    single = generate(loaded, prompts, replace(params, n=1))  # HF greedy allows n=1 only
    shared = generate(loaded, prompts, params, share_prefill=True)
    for one, many in zip(single, shared, strict=True):
        assert all(torch.equal(one.token_ids[0], t) for t in many.token_ids)


def test_the_checkpoint_generation_config_does_not_alter_sampling(tiny_model_dir, tmp_path):
    """A checkpoint's generation_config.json (Qwen2.5-VL-Instruct ships repetition_penalty
    1.05) would change the distribution `generate` samples from; rollouts sample the policy.
    Here the checkpoint asks for no_repeat_ngram_size 1 (no token twice in a sequence), and
    the rows still repeat tokens of their prompt or of themselves, as the policy does."""
    import json
    import shutil

    folder = tmp_path / "model"
    shutil.copytree(tiny_model_dir("qwen3"), folder)
    path = folder / "generation_config.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "no_repeat_ngram_size": 1}))
    loaded = load_model(folder)
    prompts = _prompts(loaded, "qwen3")
    torch.manual_seed(0)
    out = generate(loaded, prompts, SamplingParams(n=8, max_new_tokens=24))
    repeats = [
        bool(set(row.tolist()) & set(prompt.input_ids.tolist()))
        or row.unique().numel() < row.numel()
        for prompt, gen in zip(prompts, out, strict=True)
        for row in gen.token_ids
    ]
    assert any(repeats)


def test_rows_with_their_own_counts_share_one_prefill(tiny_model_dir):
    from videorl.models.generate import generate_rows

    loaded = load_model(tiny_model_dir("qwen3_vl"))
    prompts = _prompts(loaded, "qwen3_vl")
    calls, handle = _prefill_calls(loaded)
    rows = generate_rows(loaded, prompts, [3, 1], SamplingParams(n=1, max_new_tokens=6))
    handle.remove()
    assert calls == [2]  # each prompt prefilled once for its rows
    assert [len(r) for r in rows] == [3, 1] and all(t.numel() == 6 for r in rows for t in r)
