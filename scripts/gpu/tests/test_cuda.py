"""The GPU path in bf16: model forwards and generation, packed rows (sdpa_varlen) equal to
padded rows within bf16 tolerance, batched log-probs, a training step with gradient
checkpointing, and a one-process FSDP2 step (NCCL on a GPU) with a sharded checkpoint saved,
loaded and merged. Run on the GPU by `scripts/gpu/check.sh`; skipped without one (see
conftest.py for running them on the CPU)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from tests.models.test_tiny import fake_video

from videorl.models.inputs import collate, encode_prompt
from videorl.models.loading import load_model
from videorl.models.logprobs import packed_logprobs, response_logprobs

BF16 = torch.bfloat16  # on the GPU; the CPU (a check that the tests run) uses float32
# bf16 keeps 8 bits of mantissa: log-probs near -6 are exact to ~0.03; two kernels (padded
# sdpa, per-row varlen) round differently, so values agree to a few of those steps.
LOGP_TOL = {"atol": 0.1, "rtol": 0.02}


def _dtype(device: str) -> torch.dtype:
    return BF16 if device.startswith("cuda") else torch.float32


def _load(tiny_model_dir, arch, device, **kwargs):
    return load_model(tiny_model_dir(arch), dtype=_dtype(device), device=device, **kwargs)


def _rows(loaded):
    torch.manual_seed(3)
    prompts = [
        encode_prompt(loaded, "When does the red square appear?", video=fake_video(8)),
        encode_prompt(loaded, "Hi", video=fake_video(16, fps=1.0)),
        encode_prompt(loaded, "Compute 3 + 4 and answer with a number."),
    ]
    responses = [torch.tensor(r) for r in ([5, 9, 11, 30, 2], [7, 3], [40, 41, 42, 43, 44, 45])]
    return prompts, responses


def _padded(loaded, prompts, responses):
    device = next(loaded.model.parameters()).device
    inputs, mask = collate(prompts, responses, loaded.pad_token_id)
    inputs = {k: v.to(device) for k, v in inputs.items()}
    logp, _ = response_logprobs(loaded.model, inputs, inputs["input_ids"][:, -mask.shape[1] :])
    return logp * mask.to(device), mask.to(device)


@pytest.mark.parametrize("arch", ["qwen2_5_vl", "qwen3_vl", "qwen3_5"])
def test_bf16_video_forward_and_generation_on_device(tiny_model_dir, device, arch):
    from videorl.models.generate import SamplingParams, generate

    loaded = _load(tiny_model_dir, arch, device)
    assert next(loaded.model.parameters()).dtype == _dtype(device)
    prompt = encode_prompt(loaded, "When does the square turn red?", video=fake_video())
    inputs, _ = collate([prompt], None, loaded.pad_token_id)
    with torch.no_grad():
        logits = loaded.model(**{k: v.to(device) for k, v in inputs.items()}).logits
    assert logits.device.type == torch.device(device).type and torch.isfinite(logits).all()
    torch.manual_seed(0)
    (gen,) = generate(loaded, [prompt], SamplingParams(n=3, max_new_tokens=6))
    assert len(gen.token_ids) == 3 and all(1 <= t.numel() <= 6 for t in gen.token_ids)


def _packed_vs_padded(tiny_model_dir, device, arch, kernel):
    reference = _load(tiny_model_dir, arch, device)
    packed = _load(tiny_model_dir, arch, device, attn_implementation=kernel, packing="auto")
    assert packed.packing
    prompts, responses = _rows(reference)
    want, mask = _padded(reference, prompts, responses)
    got, _ = packed_logprobs(packed.model, prompts, responses)
    torch.testing.assert_close(got.float() * mask, want.float(), **LOGP_TOL)
    grads = []
    for loaded, logp in ((reference, want), (packed, got * mask)):
        logp.float().sum().backward()
        grads.append(
            torch.cat(
                [p.grad.float().flatten() for p in loaded.model.parameters() if p.grad is not None]
            )
        )
    cosine = torch.nn.functional.cosine_similarity(grads[0], grads[1], dim=0)
    assert cosine > 0.99, f"packed and padded gradients differ (cosine {cosine:.4f})"


@pytest.mark.parametrize("arch", ["qwen2_5_vl", "qwen3_vl"])
def test_sdpa_varlen_packed_equals_padded_in_bf16(tiny_model_dir, device, arch):
    _packed_vs_padded(tiny_model_dir, device, arch, "sdpa_varlen")


@pytest.mark.skipif(importlib.util.find_spec("flash_attn") is None, reason="no flash-attn")
def test_flash_attention_2_packed_equals_padded_in_bf16(tiny_model_dir, device):
    if not device.startswith("cuda"):
        pytest.skip("flash-attn runs on CUDA only")
    _packed_vs_padded(tiny_model_dir, device, "qwen2_5_vl", "flash_attention_2")


def test_batched_bf16_logprobs_equal_one_row_at_a_time(tiny_model_dir, device):
    loaded = _load(tiny_model_dir, "qwen3_vl", device)
    prompts, responses = _rows(loaded)
    with torch.no_grad():
        batched, _ = _padded(loaded, prompts, responses)
        for i, (prompt, response) in enumerate(zip(prompts, responses, strict=True)):
            single, _ = _padded(loaded, [prompt], [response])
            n = response.numel()
            torch.testing.assert_close(batched[i, :n].float(), single[0, :n].float(), **LOGP_TOL)


def _train_config(tiny_model_dir, tg_records, device, output: Path, *extra: str):
    from videorl.api import resolve_config_path
    from videorl.config import load_config

    return load_config(
        resolve_config_path("quickstart"),
        [
            f"model.path={tiny_model_dir('qwen2_5_vl')}",
            f"data.train={tg_records}",
            "data.val=null",
            "data.prompts_per_step=2",
            "rollout.n=4",
            "algorithm.pruning.pos_quota=1",
            "algorithm.pruning.neg_quota=0",
            f"model.dtype={'bfloat16' if device.startswith('cuda') else 'float32'}",
            "model.gradient_checkpointing=true",
            f"trainer.device={device}",
            f"trainer.output_dir={output}",
            "trainer.tensorboard=false",
            "trainer.val_every=0",
            "optim.warmup_steps=0",
            *extra,
        ],
    )


def test_bf16_train_step_with_gradient_checkpointing(tiny_model_dir, tg_records, device, tmp_path):
    from videorl.trainer.build import build_state
    from videorl.trainer.step import train_step

    cfg = _train_config(
        tiny_model_dir, tg_records, device, tmp_path / "run", "optim.mini_batches=2"
    )
    state = build_state(cfg, None)
    before = {n: p.detach().clone() for n, p in state.policy.model.named_parameters()}
    metrics = train_step(state, next(iter(state.sampler)))
    assert metrics["actor/skipped_nonfinite_steps"] == 0.0
    changed = [n for n, p in state.policy.model.named_parameters() if not torch.equal(p, before[n])]
    assert changed and not any("visual" in n for n in changed)  # the vision tower is frozen
    if device.startswith("cuda"):
        assert metrics["perf/peak_mem_gb"] > 0


def test_fsdp2_one_process_step_checkpoint_and_merge(tiny_model_dir, device, tmp_path):
    """World size 1 through the sharded code path (NCCL on a GPU, gloo on the CPU): one
    update, a DCP checkpoint restored into a fresh sharded model and merged to HF format."""
    worker = Path(__file__).with_name("fsdp_worker.py")
    root = Path(__file__).resolve().parents[3]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "src"), str(root)])}
    out = tmp_path / "result.json"
    done = subprocess.run(
        [sys.executable, str(worker), tiny_model_dir("qwen2_5_vl"), device, str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    result = json.loads(out.read_text())
    assert result["backend"] == ("nccl" if device.startswith("cuda") else "gloo")
    assert result["sharded_params"] > 0 and result["loss_finite"] and result["changed"]
    assert result["restored_equal"] and result["merged_equal"]
