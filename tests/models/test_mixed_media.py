"""A micro-batch mixing an image row, a video row and a text row (Video-R1-260k mixes images
and videos in one run): its log-probs equal each row's own, padded or packed, with and
without the step's visual cache (`pixel_values` + `image_grid_thw` and
`pixel_values_videos` + `video_grid_thw` are concatenated separately, in row order)."""

from __future__ import annotations

import types
from dataclasses import replace

import pytest
import torch

from tests.models.test_tiny import fake_video
from videorl.models.inputs import encode_prompt
from videorl.models.loading import load_model
from videorl.models.logprobs import rows_logprobs
from videorl.models.visual_cache import VisualEmbeddingCache


def fake_image(size: int = 56):
    return types.SimpleNamespace(
        frames=torch.randint(0, 255, (1, 3, size, size), dtype=torch.uint8), meta=None
    )


@pytest.fixture(scope="module", params=["qwen2_5_vl", "qwen3_vl"])
def mixed(request, tiny_model_dir):
    torch.manual_seed(7)
    loaded = load_model(tiny_model_dir(request.param))
    prompts = [
        encode_prompt(loaded, "Which shape is red?", image=fake_image()),
        encode_prompt(loaded, "When does the square appear?", video=fake_video(8)),
        encode_prompt(loaded, "What is 2 + 2?"),
        encode_prompt(loaded, "Box the circle.", image=fake_image(84)),
    ]
    responses = [torch.tensor(r) for r in ([5, 9, 11], [7, 3, 8, 21, 2], [40, 41], [6, 6, 7, 8])]
    return loaded, prompts, responses


def _logprobs(loaded, prompts, responses, *, packing: bool, cache: bool = False, share=False):
    visual = VisualEmbeddingCache(loaded.model) if cache else None
    loaded = replace(loaded, packing=packing, share_prompts=share, visual_cache=visual)
    with torch.no_grad():
        logp, _, mask = rows_logprobs(loaded, prompts, responses, temperature=1.0)
    return logp * mask


def test_the_mixed_prompts_carry_both_processor_paths(mixed):
    _, prompts, _ = mixed
    assert {"pixel_values", "image_grid_thw"} <= prompts[0].vision.keys()
    assert not {"pixel_values_videos", "video_grid_thw"} & prompts[0].vision.keys()
    assert {"pixel_values_videos", "video_grid_thw"} <= prompts[1].vision.keys()
    assert not prompts[2].vision


@pytest.mark.parametrize("packing", [False, True])
def test_mixed_micro_batch_equals_each_row_alone(mixed, packing):
    loaded, prompts, responses = mixed
    together = _logprobs(loaded, prompts, responses, packing=packing)
    for i, (prompt, response) in enumerate(zip(prompts, responses, strict=True)):
        alone = _logprobs(loaded, [prompt], [response], packing=False)
        n = int(response.numel())
        torch.testing.assert_close(together[i, :n], alone[0, :n], atol=1e-5, rtol=0)


def test_packed_equals_padded_with_the_visual_cache(mixed):
    loaded, prompts, responses = mixed
    padded = _logprobs(loaded, prompts, responses, packing=False)
    for packing in (False, True):
        cached = _logprobs(loaded, prompts, responses, packing=packing, cache=True)
        torch.testing.assert_close(cached, padded, atol=1e-5, rtol=0)


def test_shared_prompt_forward_of_mixed_groups(mixed):
    """Two rows per image / video prompt, as a step's groups: one forward per prompt."""
    loaded, prompts, responses = mixed
    rows = [prompts[0], prompts[0], prompts[1], prompts[1]]
    answers = [responses[0], responses[3], responses[1], responses[2]]
    padded = _logprobs(loaded, rows, answers, packing=False)
    shared = _logprobs(loaded, rows, answers, packing=False, share=True, cache=True)
    torch.testing.assert_close(shared, padded, atol=1e-5, rtol=0)


def test_mixed_micro_batch_gradients_packed_equal_padded(mixed):
    """The update's backward through a mixed micro-batch (vision tower included)."""
    loaded, prompts, responses = mixed
    grads = []
    for packing in (False, True):
        loaded.model.zero_grad()
        model = replace(loaded, packing=packing, share_prompts=False, visual_cache=None)
        logp, _, mask = rows_logprobs(model, prompts, responses, temperature=1.0)
        (logp * mask).sum().backward()
        named = [(n, p.grad) for n, p in loaded.model.named_parameters() if p.grad is not None]
        assert any("visual" in n and bool(g.abs().sum() > 0) for n, g in named)  # tower trains
        grads.append(torch.cat([g.flatten() for _, g in named]))
    loaded.model.zero_grad()
    torch.testing.assert_close(grads[1], grads[0], atol=1e-5, rtol=1e-4)
