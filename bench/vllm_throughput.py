"""Rollout throughput per architecture: the vLLM engine against the HF engine, same model, same
batch (issues 12 and 33).

For each architecture (`--archs`, default Qwen2.5-VL, Qwen3-VL and Qwen3.5) both engines sample
`--n` responses for each of `--prompts` video prompts (random frames, decoded once) with the
same sampling settings; throughput is generated tokens (EOS included, padding not) per
wall-clock second, median over `--repeats` after one warm-up call each, and the row's ratio
is vLLM's median over HF's. A greedy pass on the same batch records the parity: how many
responses have equal token ids and the largest per-token log-prob difference before the first
step where they part. On a GPU every model runs in bfloat16; on the CPU in float32, except
where vLLM's CPU build needs bfloat16 (Qwen3.5's gated delta net, `vllm_support.cpu_limits`):
there both engines run bfloat16. One results file, one row per architecture.

    python bench/vllm_throughput.py [--size bench] [--archs qwen2_5_vl,qwen3_vl,qwen3_5]
        [--prompts 8] [--n 4] [--max-new-tokens 64] [--repeats 2]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import harness
import numpy as np

ARCHS = ("qwen2_5_vl", "qwen3_vl", "qwen3_5")


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


def greedy_parity(expected: list[Any], got: list[Any]) -> dict[str, Any]:
    """Equal token ids per response, and the largest log-prob difference up to where they part."""
    equal, diff = 0, 0.0
    for e, g in zip(expected, got, strict=True):
        a, b = e.token_ids[0].tolist(), g.token_ids[0].tolist()
        equal += a == b
        k = next(
            (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
        )
        if k:
            diff = max(diff, float((e.logprobs[0][:k] - g.logprobs[0][:k]).abs().max()))
    return {"equal_token_ids": f"{equal}/{len(expected)}", "max_logprob_diff": diff}


def run_arch(arch: str, args: argparse.Namespace, on_gpu: bool) -> dict[str, Any]:
    import torch

    from videorl.config import RolloutConfig
    from videorl.models.generate import SamplingParams, layers_share_prefill
    from videorl.models.loading import load_model
    from videorl.rollout.engine import HFEngine
    from videorl.rollout.vllm_engine import VLLMEngine
    from videorl.rollout.vllm_support import VLLMSettings, cpu_limits

    path = harness.model_dir(args.work, args.size, arch)
    dtype = "bfloat16" if on_gpu or cpu_limits(path, "float32") else "float32"
    if not on_gpu and (limits := cpu_limits(path, dtype)):
        return {"arch": arch, "skipped": "; ".join(limits)}
    loaded = load_model(path, dtype=getattr(torch, dtype), device="cuda" if on_gpu else "cpu")
    prompts = video_prompts(loaded, args.prompts, arch, args.seed)
    rollout = RolloutConfig(
        max_model_len=4096,
        gpu_memory_utilization=args.gpu_memory_utilization,
        vllm_enforce_eager=not on_gpu,
        vllm_cpu_kv_cache_gb=2,
    )
    settings = VLLMSettings(model_path=str(path), rollout=rollout, dtype=dtype, seed=args.seed)
    share = layers_share_prefill(loaded.model)  # on a hybrid model, from transformers 5.24
    hf = HFEngine(loaded, max_prompts_per_call=args.prompts, share_prefill=True)
    unshared = HFEngine(loaded, max_prompts_per_call=args.prompts, share_prefill=False)
    vllm = VLLMEngine(loaded, settings)
    sampled = SamplingParams(n=args.n, max_new_tokens=args.max_new_tokens, temperature=1.0)
    results = {
        "hf": tokens_per_second(hf, prompts, sampled, args.repeats),
        "hf_unshared": tokens_per_second(unshared, prompts, sampled, args.repeats),
        "vllm": tokens_per_second(vllm, prompts, sampled, args.repeats),
    }
    ratio = results["vllm"]["tokens_per_s"]["median"] / results["hf"]["tokens_per_s"]["median"]
    greedy = SamplingParams(n=1, max_new_tokens=args.max_new_tokens, temperature=0, logprobs=True)
    parity = greedy_parity(hf.generate(prompts, greedy), vllm.generate(prompts, greedy))
    sync_path = vllm.sync_path
    vllm.close()
    print(
        f"{arch} ({dtype}): vLLM / HF {ratio:.2f}x; greedy {parity['equal_token_ids']} equal, "
        f"max log-prob diff {parity['max_logprob_diff']:.2e}",
        flush=True,
    )
    return {
        "arch": arch,
        "dtype": dtype,
        **harness.model_params(loaded.model),
        "video_tokens_per_prompt": int(prompts[0].length - prompts[0].source.token_ids.numel() + 1),
        "hf_share_prefill": share,
        "results": results,
        "vllm_over_hf": round(ratio, 2),
        "greedy_parity": parity,
        "vllm_weight_sync": sync_path,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", default="bench", choices=("tiny", "bench"))
    parser.add_argument("--archs", default=",".join(ARCHS), help="comma-separated")
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--n", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--gpu-memory-utilization", type=float, default=0.4)
    args = harness.parse_args(parser, "vllm_throughput", argv)
    if args.quick:
        args.size, args.prompts, args.n, args.max_new_tokens, args.repeats = "tiny", 2, 2, 8, 1

    import torch

    import vllm as vllm_package

    facts = harness.RunFacts()
    on_gpu = torch.cuda.is_available()
    rows = [run_arch(arch, args, on_gpu) for arch in args.archs.split(",")]
    payload = {
        "what": "rollout tokens/s per architecture, vLLM engine vs HF engine, same model and "
        "batch (bench/vllm_throughput.py)",
        "device": torch.cuda.get_device_name() if on_gpu else "cpu",
        "size": args.size,
        "batch": {"prompts": args.prompts, "n": args.n, "max_new_tokens": args.max_new_tokens},
        "repeats": args.repeats,
        "rows": rows,
        "vllm": vllm_package.__version__,
        "quick": args.quick,
        **facts.facts(),
    }
    print(
        harness.markdown_table(
            [
                "arch",
                "dtype",
                "HF tokens/s",
                "HF, prefill per sample",
                "vLLM tokens/s",
                "vLLM / HF",
                "greedy equal",
            ],
            [
                [
                    r["arch"],
                    r["dtype"],
                    harness.fmt(r["results"]["hf"]["tokens_per_s"], digits=1),
                    harness.fmt(r["results"]["hf_unshared"]["tokens_per_s"], digits=1),
                    harness.fmt(r["results"]["vllm"]["tokens_per_s"], digits=1),
                    f"{r['vllm_over_hf']:.2f}x",
                    r["greedy_parity"]["equal_token_ids"],
                ]
                if "results" in r
                else [r["arch"], "-", "-", "-", "-", "-", r["skipped"]]
                for r in rows
            ],
        )
    )
    harness.write_results(args.out, payload)


if __name__ == "__main__":
    main()
