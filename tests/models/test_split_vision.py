"""The vision tower split over a sequence-parallel group (`models/split_vision.py`).

One process: the tower on each share of the temporal slices, concatenated, equals the tower
on the whole call (the split is exact). Two gloo processes: log-probs and gradients (a
trainable tower included) equal the one-process run, and each temporal slice of each video
is encoded exactly once across the group, in a forward and through the visual-embedding cache.
"""

from __future__ import annotations

import itertools
import types
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.distributed as dist

from tests.gloo_ranks import spawn_ranks
from videorl.models.inputs import PromptEncoding, collate, encode_prompt
from videorl.models.loading import LoadedModel, load_model
from videorl.models.logprobs import response_logprobs
from videorl.models.sequence_parallel import sequence_parallel
from videorl.models.split_vision import (
    _local_grid,
    slice_shares,
    vision_split_refusal,
    vision_tower,
)
from videorl.models.visual_cache import VisualEmbeddingCache

SIZE = 2
ARCHS = ["qwen2_5_vl", "qwen3_vl"]


def _prompts(loaded: LoadedModel) -> list[PromptEncoding]:
    """Two video prompts of 8 and 4 frames (4 and 2 temporal slices of 2 frames), 224 px:
    Qwen2.5-VL's windows cut each frame in four; the shares of 2 ranks (3 slices each)
    split the first video 3 | 1."""
    generator = torch.Generator().manual_seed(0)
    prompts = []
    for question, frames in (("When does it happen?", 8), ("Which object is red?", 4)):
        pixels = torch.randint(
            0, 255, (frames, 3, 224, 224), dtype=torch.uint8, generator=generator
        )
        meta = types.SimpleNamespace(
            source_fps=4.0,
            fps=2.0,
            timestamps=[i / 2 for i in range(frames)],
            width=224,
            height=224,
        )
        video = types.SimpleNamespace(frames=pixels, meta=meta)
        prompts.append(encode_prompt(loaded, question, video=video))  # type: ignore[arg-type]  # a stand-in with only what is read
    return prompts


def _inputs(loaded: LoadedModel) -> tuple[dict[str, torch.Tensor], torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(1)
    responses = [torch.randint(20, 200, (n,), generator=generator) for n in (9, 5)]
    inputs, mask = collate(_prompts(loaded), responses, loaded.pad_token_id)
    return inputs, inputs["input_ids"][:, -mask.shape[1] :], mask


def _record_patches(loaded: LoadedModel) -> tuple[list[torch.Tensor], Any]:
    """Every pixel row the tower's patch embedding receives (what this rank encodes)."""
    seen: list[torch.Tensor] = []
    tower: Any = vision_tower(loaded.model)
    hook = tower.patch_embed.register_forward_pre_hook(lambda _, a: seen.append(a[0].detach()))
    return seen, hook


def _step(loaded: LoadedModel) -> dict[str, Any]:
    """Log-probs and the gradients of a weighted sum of them; the pixel rows encoded."""
    loaded.model.zero_grad(set_to_none=True)
    seen, hook = _record_patches(loaded)
    inputs, targets, mask = _inputs(loaded)
    logp, _ = response_logprobs(loaded.model, inputs, targets)
    hook.remove()
    weights = torch.linspace(-1.0, 2.0, mask.numel()).view_as(mask)
    (logp * mask * weights).sum().backward()
    grads = {
        n: p.grad.detach().clone() for n, p in loaded.model.named_parameters() if p.grad is not None
    }
    return {"logp": (logp * mask).detach(), "grads": grads, "patches": seen}


def _cached(loaded: LoadedModel) -> dict[str, Any]:
    """Through a visual-embedding cache split over the group: rank 0 has stored the second
    prompt alone (as its rollout would), then every rank asks twice for both prompts."""
    prompts = _prompts(loaded)
    cache = VisualEmbeddingCache(loaded.model)
    with torch.no_grad():
        if dist.get_rank() == 0:
            cache.encoder_outputs(prompts[1:])  # unsplit: this rank alone
        seen, hook = _record_patches(loaded)
        with cache.split_over(dist.group.WORLD):  # type: ignore[arg-type]  # the group is initialised here
            first = cache.encoder_outputs(prompts)["video"]
            cache.encoder_outputs(prompts)
        hook.remove()
    return {"patches": seen, "pooled": torch.cat(first.pooler_output)}


def _worker(rank: int, model_dir: str, out: str) -> None:
    loaded = load_model(model_dir)
    with sequence_parallel(loaded.model):
        result = _step(loaded)
    for grad in result["grads"].values():  # gradients average over the group
        dist.all_reduce(grad)
        grad /= SIZE
    result["cached"] = _cached(loaded)
    torch.save(result, f"{out}.{rank}")


def _assert_gradients_equal(one: dict[str, torch.Tensor], two: dict[str, torch.Tensor]) -> float:
    assert one.keys() == two.keys()
    worst = 1.0
    for name, grad in one.items():
        if grad.norm() < 1e-12:
            assert two[name].norm() < 1e-9, name
            continue
        cosine = float(
            torch.nn.functional.cosine_similarity(grad.flatten(), two[name].flatten(), 0)
        )
        worst = min(worst, cosine)
        error = float((grad - two[name]).norm() / grad.norm())
        assert error < 1e-3, f"{name}: relative gradient error {error}"
    assert worst > 0.9999, f"lowest per-parameter gradient cosine {worst}"
    return worst


@pytest.mark.slow  # multi-process: `make test`, not `make test-fast`
@pytest.mark.parametrize("arch", ARCHS)
def test_two_ranks_share_the_tower_and_equal_one_process(tiny_model_dir, tmp_path: Path, arch):
    model_dir = tiny_model_dir(arch)
    loaded = load_model(model_dir)
    one = _step(loaded)
    tower_grads = [n for n in one["grads"] if ".visual." in f".{n}"]
    assert tower_grads, "the tower must be trainable here"
    (whole,) = one["patches"]  # one process: one tower call on every patch
    out = str(tmp_path / "two.pt")
    spawn_ranks(_worker, (model_dir, out), SIZE, tmp_path / "ranks")
    ranks = [torch.load(f"{out}.{rank}") for rank in range(SIZE)]

    # each temporal slice of each video encoded once across the group: the ranks' pixel
    # rows, in rank order, are the whole call's rows; no rank encodes all of them
    shares = [torch.cat(r["patches"]) for r in ranks]
    assert [len(r["patches"]) for r in ranks] == [1] * SIZE  # one tower call per rank
    assert all(0 < len(s) < len(whole) for s in shares), ([s.shape for s in shares], whole.shape)
    assert torch.equal(torch.cat(shares), whole)

    two = ranks[0]
    diff = float((one["logp"] - two["logp"]).abs().max())
    assert diff < 1e-5, f"max |log-prob difference| {diff}"
    for rank in ranks[1:]:
        assert torch.equal(rank["logp"], two["logp"])
    worst = _assert_gradients_equal(one["grads"], two["grads"])
    tower_worst = _assert_gradients_equal(
        {n: one["grads"][n] for n in tower_grads}, {n: two["grads"][n] for n in tower_grads}
    )

    # the cache: rank 0 stored one prompt alone; the ranks agree to encode both (split), and
    # the second request encodes nothing
    cached = [r["cached"] for r in ranks]
    assert len(cached[0]["patches"]) == len(cached[1]["patches"]) == 1
    assert torch.equal(torch.cat([c["patches"][0] for c in cached]), whole)
    reference = VisualEmbeddingCache(loaded.model)
    with torch.no_grad():
        pooled = torch.cat(reference.encoder_outputs(_prompts(loaded))["video"].pooler_output)
    for c in cached:
        torch.testing.assert_close(c["pooled"], pooled, atol=1e-5, rtol=0)
    print(
        f"{arch}: max |dlogp| {diff:.2e}, min grad cosine {worst:.8f} "
        f"(tower {tower_worst:.8f}), patches per rank {[len(s) for s in shares]}"
    )


@pytest.mark.parametrize("arch", ARCHS)
def test_the_tower_on_each_share_equals_the_whole_call(tiny_model_dir, arch):
    """Why the split is exact: no computation of the tower crosses temporal slices. Grids of
    several sizes: Qwen2.5-VL's 4 x 4-token windows cut the 16 x 16 and 16 x 12 frames
    (padded windows in the latter)."""
    loaded = load_model(tiny_model_dir(arch))
    tower: Any = vision_tower(loaded.model)
    config = tower.config
    grid = torch.tensor([[4, 16, 12], [2, 8, 8], [1, 16, 16]])
    width = config.in_channels * config.temporal_patch_size * config.patch_size**2
    pixels = torch.randn(
        int(grid.prod(-1).sum()), width, generator=torch.Generator().manual_seed(0)
    )
    with torch.no_grad():
        whole = tower(pixels, grid_thw=grid)
        for size in (2, 3, 7):
            parts = []
            for share in slice_shares(grid, size) or []:
                local, first, last = _local_grid(grid, share)
                parts.append(tower(pixels[first:last], grid_thw=local))
            torch.testing.assert_close(
                torch.cat([p.pooler_output for p in parts]), whole.pooler_output, atol=1e-5, rtol=0
            )
            for layer, features in enumerate(getattr(whole, "deepstack_features", None) or []):
                split = torch.cat([p.deepstack_features[layer] for p in parts])
                torch.testing.assert_close(split, features, atol=1e-5, rtol=0)


def test_slice_shares_are_contiguous_balanced_and_cover_every_slice():
    grid = torch.tensor([[4, 8, 8], [2, 8, 8], [1, 4, 4]])  # 7 slices: 64 x 6 patches, then 16
    assert slice_shares(grid, 2) == [(0, 3), (3, 7)]
    assert slice_shares(grid, 7) == [(k, k + 1) for k in range(7)]
    assert slice_shares(grid, 8) is None  # a rank would encode nothing: not split
    for size in (2, 3, 4, 5):
        shares = slice_shares(grid, size)
        assert shares is not None and shares[0][0] == 0 and shares[-1][1] == 7
        assert all(a < b for a, b in shares)
        assert all(end == start for (_, end), (start, _) in itertools.pairwise(shares))
    local, first, last = _local_grid(grid, (3, 6))
    assert local.tolist() == [[1, 8, 8], [2, 8, 8]] and (first, last) == (192, 384)


def test_a_tower_not_known_to_stay_in_a_slice_is_refused_with_the_reason(tiny_model_dir):
    assert vision_split_refusal(load_model(tiny_model_dir("qwen2_5_vl")).model) is None

    class OtherTower(torch.nn.Module):
        pass

    model = torch.nn.Module()
    model.visual = OtherTower()
    reason = vision_split_refusal(model)
    assert reason is not None and "OtherTower is not known to keep attention inside one" in reason
    assert "every rank encodes every video" in reason
    assert "no vision tower" in (vision_split_refusal(torch.nn.Linear(1, 1)) or "")
