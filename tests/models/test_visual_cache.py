"""Each video encoded once: stored vision embeddings give the recomputed log-probs and samples."""

from __future__ import annotations

import pytest
import torch

from tests.models.test_tiny import fake_video
from videorl.models.generate import SamplingParams, generate
from videorl.models.inputs import encode_prompt
from videorl.models.loading import load_model
from videorl.models.logprobs import rows_logprobs
from videorl.models.visual_cache import VisualEmbeddingCache


def _count_tower_items(loaded):
    """Videos/images the vision tower encodes (rows of its `grid_thw`), in a list cell."""
    count = [0]

    def hook(_module, _args, kwargs):
        count[0] += int(kwargs["grid_thw"].shape[0])

    return count, loaded.model.model.visual.register_forward_pre_hook(hook, with_kwargs=True)


def _passes(loaded, prompts):
    """Generation (shared prefill) then log-probs of its rows in two no-grad micro-batches
    (the last two rows apart) and one forward with gradients, as a step does."""
    torch.manual_seed(3)
    gens = generate(loaded, prompts, SamplingParams(n=3, max_new_tokens=8), share_prefill=True)
    rows = [p for p in prompts for _ in range(3)]
    responses = [t for g in gens for t in g.token_ids]
    cut = len(rows) - 2
    with torch.no_grad():
        first = rows_logprobs(loaded, rows[:cut], responses[:cut], temperature=1.0)[0]
        second = rows_logprobs(loaded, rows[cut:], responses[cut:], temperature=1.0)[0]
    logp, _, mask = rows_logprobs(loaded, rows, responses, temperature=1.0)
    return gens, [first, second, logp], mask


@pytest.mark.parametrize(
    ("arch", "packing"), [("qwen2_5_vl", False), ("qwen2_5_vl", True), ("qwen3_vl", False)]
)
def test_frozen_tower_encodes_each_video_once(tiny_model_dir, arch, packing):
    loaded = load_model(tiny_model_dir(arch), attn_implementation="sdpa_varlen", packing=packing)
    loaded.model.model.visual.requires_grad_(False)
    prompts = [
        encode_prompt(loaded, "When does the red square appear in the video?", video=fake_video()),
        encode_prompt(loaded, "Hi", video=fake_video()),
    ]
    results = {}
    for reuse in (False, True):
        loaded.visual_cache = VisualEmbeddingCache(loaded.model) if reuse else None
        count, handle = _count_tower_items(loaded)
        results[reuse] = (*_passes(loaded, prompts), count[0])
        handle.remove()
    (gens, logps, _, calls), (gens_c, logps_c, _, calls_c) = results[False], results[True]
    assert calls == 2 + 4 + 2 + 6  # recomputed in every forward
    assert calls_c == len(prompts) == loaded.visual_cache.encoded_items  # once per video
    for a, b in zip(gens, gens_c, strict=True):
        assert all(torch.equal(x, y) for x, y in zip(a.token_ids, b.token_ids, strict=True))
    for recomputed, reused in zip(
        logps, logps_c, strict=True
    ):  # the same rows, so the same padding
        torch.testing.assert_close(reused, recomputed, atol=1e-5, rtol=0)


def test_trainable_tower_is_recomputed_with_gradients(tiny_model_dir):
    loaded = load_model(tiny_model_dir("qwen2_5_vl"))
    loaded.visual_cache = VisualEmbeddingCache(loaded.model)
    prompts = [encode_prompt(loaded, "When?", video=fake_video())]
    count, handle = _count_tower_items(loaded)
    _, logps, mask = _passes(loaded, prompts)
    handle.remove()
    assert count[0] == 1 + 3  # one shared encoding for the no-grad passes; the update's own
    (logps[-1] * mask).sum().backward()
    grads = [p.grad for p in loaded.model.model.visual.parameters()]
    assert any(g is not None and bool(g.abs().sum() > 0) for g in grads)
    loaded.visual_cache.clear()
    assert len(loaded.visual_cache) == 0


def test_retain_keeps_only_the_given_prompts(tiny_model_dir):
    """Dynamic sampling frees a draw's dropped prompts: `retain` keeps the others' entries."""
    loaded = load_model(tiny_model_dir("qwen2_5_vl"))
    cache = VisualEmbeddingCache(loaded.model)
    kept, dropped = (encode_prompt(loaded, text, video=fake_video()) for text in ("a", "b"))
    cache.encoder_outputs([kept, dropped])
    assert len(cache) == 2 and cache.encoded_items == 2
    cache.retain([kept])
    assert len(cache) == 1
    cache.encoder_outputs([kept])  # still stored: not encoded again
    assert cache.encoded_items == 2
    cache.encoder_outputs([dropped])  # gone: encoded again
    assert cache.encoded_items == 3


def test_merged_pixels_keep_their_leaves_not_earlier_merges():
    """A context extended twice records the prompt's pixels and both tool items as its
    parts; the first merge is not kept alive by the second."""
    import gc
    import weakref

    from videorl.models.visual_cache import leaves, note_merges

    def items(rows: int) -> dict:
        return {
            "pixel_values_videos": torch.rand(rows, 4),
            "video_grid_thw": torch.tensor([[1, 1, rows]]),
        }

    prompt, clip1, clip2 = items(2), items(3), items(4)

    def merge(before, added):
        merged = {k: torch.cat([before[k], added[k]]) for k in before}
        note_merges(before, added, merged)
        return merged

    first = merge(prompt, clip1)
    second = merge(first, clip2)
    found = leaves(second["pixel_values_videos"], second["video_grid_thw"])
    parts = [prompt, clip1, clip2]
    assert len(found) == 3
    assert all(p is q["pixel_values_videos"] for (p, _), q in zip(found, parts, strict=True))
    gone = weakref.ref(first["pixel_values_videos"])
    del first
    gc.collect()
    assert gone() is None
