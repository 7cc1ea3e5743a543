"""Padding-free packed rows give the same log-probs and gradients as padded rows."""

from __future__ import annotations

import pytest
import torch

from tests.models.test_tiny import fake_video
from videorl.errors import ConfigError
from videorl.models.batching import plan_microbatches
from videorl.models.inputs import collate, encode_prompt
from videorl.models.loading import load_model
from videorl.models.logprobs import packed_logprobs, response_logprobs, rows_logprobs
from videorl.models.packing import pack_rows, resolve_packing


def _rows(loaded, arch):
    """Rows of unequal prompt and response lengths: two videos of different lengths (the
    second long enough that text after it depends on the temporal positions), a text prompt."""
    torch.manual_seed(3)
    vision = arch != "qwen3"
    prompts = [
        encode_prompt(
            loaded, "When does the red square appear?", video=fake_video(8) if vision else None
        ),
        encode_prompt(loaded, "Hi", video=fake_video(16, fps=1.0) if vision else None),
        encode_prompt(loaded, "Compute 3 + 4 and answer with a number."),
    ]
    responses = [torch.tensor(r) for r in ([5, 9, 11, 30, 2], [7, 3], [40, 41, 42, 43, 44, 45, 46])]
    return prompts, responses


def _padded(loaded, prompts, responses, temperature=1.0):
    inputs, mask = collate(prompts, responses, loaded.pad_token_id)
    logp, entropy = response_logprobs(
        loaded.model, inputs, inputs["input_ids"][:, -mask.shape[1] :], temperature=temperature
    )
    return logp * mask, entropy * mask


@pytest.mark.parametrize("arch", ["qwen2_5_vl", "qwen3_vl", "qwen3"])
def test_packed_logprobs_equal_padded(tiny_model_dir, arch):
    loaded = load_model(tiny_model_dir(arch))
    prompts, responses = _rows(loaded, arch)
    with torch.no_grad():
        want_logp, want_entropy = _padded(loaded, prompts, responses, temperature=0.7)
        logp, entropy = packed_logprobs(loaded.model, prompts, responses, temperature=0.7)
    torch.testing.assert_close(logp, want_logp, atol=1e-5, rtol=0)
    torch.testing.assert_close(entropy, want_entropy, atol=1e-5, rtol=0)


def test_packed_rows_do_not_see_each_other(tiny_model_dir):
    """Row 2's log-probs are the same whether row 1 precedes it in the pack or not."""
    loaded = load_model(tiny_model_dir("qwen2_5_vl"))
    prompts, responses = _rows(loaded, "qwen2_5_vl")
    with torch.no_grad():
        together, _ = packed_logprobs(loaded.model, prompts, responses)
        alone, _ = packed_logprobs(loaded.model, prompts[2:], responses[2:])
    torch.testing.assert_close(together[2], alone[0], atol=1e-5, rtol=0)


def test_packed_positions_restart_per_row_with_multimodal_rope(tiny_model_dir):
    loaded = load_model(tiny_model_dir("qwen2_5_vl"))
    prompts, responses = _rows(loaded, "qwen2_5_vl")
    packed = pack_rows(loaded.model, prompts, responses)
    lengths = [p.length + r.numel() for p, r in zip(prompts, responses, strict=True)]
    positions = packed.inputs["position_ids"]
    assert positions.shape == (4, 1, sum(lengths))
    text = positions[0, 0]
    starts = [0, lengths[0], lengths[0] + lengths[1]]
    assert text[starts].tolist() == [0, 0, 0]
    # the video row's multimodal positions equal those of its own unpadded forward
    row = torch.cat([prompts[1].input_ids, responses[1]])
    types = torch.zeros_like(row, dtype=torch.int32)
    types[: prompts[1].length] = prompts[1].mm_token_type_ids
    grids = {k: v for k, v in prompts[1].vision.items() if not k.startswith("pixel")}
    want, _ = loaded.model.model.get_rope_index(row[None], types[None], **grids)  # type: ignore[operator]  # nn.Module types attributes as Tensor | Module
    assert torch.equal(positions[1:, 0, starts[1] : starts[2]], want[:, 0])
    assert packed.targets.tolist() == torch.cat(responses).tolist()
    assert (
        packed.inputs["input_ids"][0, packed.logit_positions + 1].tolist()
        == packed.targets.tolist()
    )


def test_packed_gradients_equal_padded(tiny_model_dir):
    loaded = load_model(tiny_model_dir("qwen2_5_vl"))
    prompts, responses = _rows(loaded, "qwen2_5_vl")
    grads = []
    for packed in (False, True):
        loaded.model.zero_grad()
        if packed:
            logp, _ = packed_logprobs(loaded.model, prompts, responses)
        else:
            logp, _ = _padded(loaded, prompts, responses)
        logp.sum().backward()
        grads.append(
            torch.cat([p.grad.flatten() for p in loaded.model.parameters() if p.grad is not None])
        )
    torch.testing.assert_close(grads[1], grads[0], atol=1e-5, rtol=1e-4)


def test_rows_logprobs_dispatches_on_the_loaded_setting(tiny_model_dir):
    padded = load_model(tiny_model_dir("qwen3_vl"), packing=False)
    packed = load_model(tiny_model_dir("qwen3_vl"), packing=True)
    assert not padded.packing and packed.packing
    prompts, responses = _rows(padded, "qwen3_vl")
    with torch.no_grad():
        a, _, mask_a = rows_logprobs(padded, prompts, responses, temperature=1.0)
        b, _, mask_b = rows_logprobs(packed, prompts, responses, temperature=1.0)
    assert torch.equal(mask_a, mask_b) and mask_a.sum(1).tolist() == [5, 2, 7]
    torch.testing.assert_close(b * mask_b, a * mask_a, atol=1e-5, rtol=0)


def test_packing_modes(tiny_model_dir):
    sdpa = load_model(tiny_model_dir("qwen2_5_vl")).model
    assert resolve_packing(sdpa, "auto") is False  # a masked kernel: packing would not pay off
    assert resolve_packing(sdpa, True) is True
    assert resolve_packing(sdpa, False) is False
    sdpa.config._attn_implementation = "flash_attention_2"
    assert resolve_packing(sdpa, "auto") is True
    hybrid = load_model(tiny_model_dir("qwen3_5")).model
    assert resolve_packing(hybrid, "auto") is False
    with pytest.raises(ConfigError, match="linear-attention.*model.packing to auto or false"):
        load_model(tiny_model_dir("qwen3_5"), packing=True)


def test_unavailable_attention_kernel_names_the_fix(tiny_model_dir):
    with pytest.raises(ConfigError, match="flash_attention_2.*use sdpa"):
        load_model(tiny_model_dir("qwen3"), attn_implementation="flash_attention_2")


def test_packed_microbatches_budget_real_tokens():
    lengths = [100, 10, 10, 10]
    assert plan_microbatches(lengths, 130) == [[0], [1, 2, 3]]  # padded: 2 x 100 > 130
    assert plan_microbatches(lengths, 130, packed=True) == [[0, 1, 2, 3]]  # 130 real tokens


def test_row_boundaries_from_restarting_positions():
    from videorl.models.varlen_attention import row_boundaries

    assert row_boundaries(torch.tensor([[0, 1, 2, 0, 1, 0, 1, 2, 3]])) == [0, 3, 5, 9]
    assert row_boundaries(torch.tensor([[0, 1, 2, 0, 1]])) == [0, 3, 5]  # two rows
    assert row_boundaries(torch.tensor([[0, 1, 2, 3]])) is None  # one row: plain causal


@pytest.mark.parametrize("arch", ["qwen2_5_vl", "qwen3_vl", "qwen3"])
def test_sdpa_varlen_packed_equals_padded_sdpa(tiny_model_dir, arch):
    """Per-row fused attention on the packed sequence = the padded forward with plain sdpa,
    for log-probs and gradients; `auto` packs with this kernel."""
    reference = load_model(tiny_model_dir(arch))
    varlen = load_model(tiny_model_dir(arch), attn_implementation="sdpa_varlen", packing="auto")
    assert varlen.packing
    prompts, responses = _rows(reference, arch)
    with torch.no_grad():  # two rows: a single restart; three rows: two
        two, _ = packed_logprobs(varlen.model, prompts[1:], responses[1:])
        torch.testing.assert_close(two, _padded(reference, prompts[1:], responses[1:])[0])
    want, _ = _padded(reference, prompts, responses)
    got, _ = packed_logprobs(varlen.model, prompts, responses)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=0)
    grads = []
    for loaded, logp in ((reference, want), (varlen, got)):
        logp.sum().backward()
        grads.append(
            torch.cat([p.grad.flatten() for p in loaded.model.parameters() if p.grad is not None])
        )
    torch.testing.assert_close(grads[1], grads[0], atol=1e-5, rtol=1e-4)


def test_sdpa_varlen_generates_like_sdpa(tiny_model_dir):
    """Outside packed forwards (left-padded prompts, KV cache, the vision tower) the kernel is sdpa."""
    from videorl.models.generate import SamplingParams, generate

    reference = load_model(tiny_model_dir("qwen2_5_vl"))
    varlen = load_model(tiny_model_dir("qwen2_5_vl"), attn_implementation="sdpa_varlen")
    prompts, _ = _rows(reference, "qwen2_5_vl")
    params = SamplingParams(n=1, max_new_tokens=8, temperature=0.0)
    (a, b, c), (x, y, z) = generate(reference, prompts, params), generate(varlen, prompts, params)
    for want, got in ((a, x), (b, y), (c, z)):
        assert [t.tolist() for t in got.token_ids] == [t.tolist() for t in want.token_ids]
