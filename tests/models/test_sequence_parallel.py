"""Ulysses sequence parallelism (`models/sequence_parallel.py`) on 2 CPU processes (gloo):
the same log-probs and gradients as one process, for padded and packed rows of a video
prompt whose visual tokens fall on both ranks' shards."""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.distributed as dist

from tests.gloo_ranks import spawn_ranks
from videorl.models.inputs import PromptEncoding, collate, encode_prompt
from videorl.models.loading import LoadedModel, load_model
from videorl.models.logprobs import packed_logprobs, response_logprobs
from videorl.models.packing import pack_rows
from videorl.models.sequence_parallel import check_splittable, sequence_parallel

pytestmark = pytest.mark.slow  # multi-process: `make test`, not `make test-fast`

SIZE = 2


def _rows(loaded: LoadedModel) -> tuple[list[PromptEncoding], list[torch.Tensor]]:
    """Two rows, each a video prompt (long enough that its visual tokens cross the middle of
    the sequence) and a response; prompts of different lengths, so rows are padded."""
    generator = torch.Generator().manual_seed(0)
    prompts = []
    for question in ("When does it happen?", "How many objects are there, and which is red?"):
        frames = torch.randint(0, 255, (8, 3, 112, 112), dtype=torch.uint8, generator=generator)
        meta = types.SimpleNamespace(
            source_fps=4.0, fps=2.0, timestamps=[i / 2 for i in range(8)], width=112, height=112
        )
        video = types.SimpleNamespace(frames=frames, meta=meta)
        prompts.append(encode_prompt(loaded, question, video=video))  # type: ignore[arg-type]  # a stand-in with only what is read
    responses = [torch.randint(20, 200, (n,), generator=generator) for n in (9, 5)]
    return prompts, responses


def _logprobs(loaded: LoadedModel, packed: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-probs [B, R] and the response mask of the two rows."""
    prompts, responses = _rows(loaded)
    lengths = torch.tensor([int(r.numel()) for r in responses])
    mask = (torch.arange(int(lengths.max()))[None] < lengths[:, None]).float()
    if packed:
        logp, _ = packed_logprobs(loaded.model, prompts, responses)
        return logp, mask
    inputs, mask = collate(prompts, responses, loaded.pad_token_id)
    targets = inputs["input_ids"][:, -mask.shape[1] :]
    logp, _ = response_logprobs(loaded.model, inputs, targets)
    return logp, mask


def _visual_on_both_halves(loaded: LoadedModel, packed: bool) -> bool:
    prompts, responses = _rows(loaded)
    if packed:
        token_types = pack_rows(loaded.model, prompts, responses).inputs["mm_token_type_ids"]
    else:
        token_types = collate(prompts, responses, loaded.pad_token_id)[0]["mm_token_type_ids"]
    half = -(-token_types.shape[1] // SIZE)
    return bool((token_types[:, :half] != 0).any() and (token_types[:, half:] != 0).any())


def _step(loaded: LoadedModel, packed: bool) -> dict[str, Any]:
    """Log-probs and the gradients of a weighted sum of them."""
    loaded.model.zero_grad(set_to_none=True)
    seen: list[int] = []  # the sequence length that the decoder layers run on
    layer = loaded.model.model.language_model.layers[0]  # type: ignore[index]  # nn.Module types attributes as Tensor | Module
    hook = layer.register_forward_pre_hook(lambda _, args: seen.append(args[0].shape[1]))
    logp, mask = _logprobs(loaded, packed)
    hook.remove()
    weights = torch.linspace(-1.0, 2.0, mask.numel()).view_as(mask)
    (logp * mask * weights).sum().backward()
    grads = {
        n: p.grad.detach().clone() for n, p in loaded.model.named_parameters() if p.grad is not None
    }
    return {"logp": (logp * mask).detach(), "grads": grads, "lengths": seen}


def _worker(rank: int, model_dir: str, packed: bool, out: str) -> None:
    loaded = load_model(model_dir, packing=packed)
    with sequence_parallel(loaded.model):
        result = _step(loaded, packed)
    for grad in result["grads"].values():  # gradients average over the group
        dist.all_reduce(grad)
        grad /= SIZE
    if rank == 0:
        torch.save(result, out)


@pytest.mark.parametrize("packed", [False, True], ids=["padded", "packed"])
@pytest.mark.parametrize("arch", ["qwen2_5_vl", "qwen3_vl"])
def test_two_ranks_equal_one_process(tiny_model_dir, tmp_path: Path, arch: str, packed: bool):
    model_dir = tiny_model_dir(arch)
    loaded = load_model(model_dir, packing=packed)
    assert _visual_on_both_halves(loaded, packed)
    one = _step(loaded, packed)
    out = tmp_path / "two.pt"
    spawn_ranks(_worker, (model_dir, packed, str(out)), SIZE, tmp_path / "ranks")
    two = torch.load(out)
    assert two["lengths"] == [-(-one["lengths"][0] // SIZE)]  # each rank ran its shard
    diff = float((one["logp"] - two["logp"]).abs().max())
    assert diff < 1e-5, f"max |log-prob difference| {diff}"
    assert one["grads"].keys() == two["grads"].keys()
    worst = 1.0
    for name, grad in one["grads"].items():
        if grad.norm() < 1e-12:
            assert two["grads"][name].norm() < 1e-9, name
            continue
        cosine = float(
            torch.nn.functional.cosine_similarity(
                grad.flatten(), two["grads"][name].flatten(), dim=0
            )
        )
        worst = min(worst, cosine)
        error = float((grad - two["grads"][name]).norm() / grad.norm())
        assert error < 1e-3, f"{name}: relative gradient error {error}"
    assert worst > 0.9999, f"lowest per-parameter gradient cosine {worst}"
    print(f"{arch} packed={packed}: max |dlogp| {diff:.2e}, min grad cosine {worst:.8f}")


def _model(model_type: str, heads: int, kv_heads: int, layer_types: list[str] | None = None) -> Any:
    text = types.SimpleNamespace(
        num_attention_heads=heads, num_key_value_heads=kv_heads, layer_types=layer_types
    )
    return types.SimpleNamespace(
        config=types.SimpleNamespace(model_type=model_type, text_config=text)
    )


def test_heads_not_divisible_is_a_one_line_error():
    check_splittable(_model("qwen2_5_vl", 16, 2), 2)
    check_splittable(_model("qwen2_5_vl", 16, 2), 4)  # KV heads repeated: 2 copies each
    with pytest.raises(ValueError, match=r"divide the attention heads \(16\)") as err:
        check_splittable(_model("qwen2_5_vl", 16, 2), 3)
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match=r"multiple of the KV heads \(4\)"):
        check_splittable(_model("qwen3_vl", 24, 4), 6)


def test_linear_attention_is_refused_with_the_reason():
    model = _model("qwen3_5", 16, 4, ["linear_attention", "full_attention"])
    with pytest.raises(ValueError, match="recurrent state along the sequence"):
        check_splittable(model, 2)
