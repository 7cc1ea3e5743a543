"""Padding-free packed rows against padded micro-batches in the update's forward + backward (issue 7).

Rows like a video-RL step's: video prompts of different lengths (videos of 4..16 frames at
several sizes) and responses of 8..`--max-response` tokens. Both layouts plan micro-batches
under the same token budget (`models/batching.py`: padded cost = rows x longest, packed cost =
sum of lengths) and run forward + backward of the summed response log-probs over all rows,
the update's work. Reported: tokens the model computes (padding included), micro-batches, and
seconds per call (median of `--repeats` after a warm-up), as a ratio padded / packed.

Variants: `padded` (sdpa); `packed-sdpa-mask` (one row per micro-batch, block-diagonal
causal mask built by transformers: no padding, but attention over N x N with the unfused
kernel); `packed-sdpa-varlen` (`models/varlen_attention.py`: fused causal sdpa per packed
row); `packed-flash` (flash-attn's varlen kernel) where a CUDA GPU and flash-attn exist.

    python bench/packing.py [--size bench] [--rows 32] [--budget 4096] [--max-response 128]
"""

from __future__ import annotations

import argparse
import importlib.util
from typing import Any

import harness
import numpy as np


def make_rows(
    loaded: Any, count: int, max_response: int, arch: str, seed: int
) -> tuple[list, list]:
    import torch

    from videorl.models.inputs import encode_prompt
    from videorl.video.decode import VideoConfig, frames_from_array

    factor = 28 if arch == "qwen2_5_vl" else 32
    rng = np.random.default_rng(seed)
    prompts, responses = [], []
    for i in range(count):
        frames = int(rng.choice([4, 8, 12, 16]))
        side = int(rng.choice([2, 3, 4])) * factor
        config = VideoConfig(
            fps=2.0,
            min_frames=4,
            max_frames=16,
            min_pixels=4 * factor**2,
            max_pixels=side * side,
            factor=factor,
        )
        array = rng.integers(0, 256, size=(frames, side, side, 3), dtype=np.uint8)
        video = frames_from_array(array, 2.0, config)
        prompts.append(encode_prompt(loaded, f"When does the event happen? ({i})", video=video))
        length = int(rng.integers(8, max_response + 1))
        responses.append(torch.from_numpy(rng.integers(100, 400, size=length)).long())
    return prompts, responses


def timed_pass(
    loaded: Any, prompts: list, responses: list, budget: int, repeats: int
) -> dict[str, Any]:
    """Forward + backward of every micro-batch; seconds per full pass and tokens computed."""
    import torch

    from videorl.models.batching import plan_microbatches
    from videorl.models.logprobs import rows_logprobs

    sizes = [p.length + int(r.numel()) for p, r in zip(prompts, responses, strict=True)]
    micros = plan_microbatches(sizes, budget, packed=loaded.packing)
    computed = sum(
        sum(sizes[i] for i in m) if loaded.packing else len(m) * max(sizes[i] for i in m)
        for m in micros
    )

    def one_pass() -> float:
        loaded.model.zero_grad(set_to_none=True)
        with harness.Elapsed() as elapsed:
            for micro in micros:
                logp, _, mask = rows_logprobs(
                    loaded,
                    [prompts[i] for i in micro],
                    [responses[i] for i in micro],
                    temperature=1.0,
                )
                (logp * mask).sum().backward()
            if torch.cuda.is_available():
                torch.cuda.synchronize()
        return elapsed.wall

    one_pass()  # warm-up
    seconds = [one_pass() for _ in range(repeats)]
    return {
        "micro_batches": len(micros),
        "tokens_computed": computed,
        "real_tokens": sum(sizes),
        "seconds": harness.spread(seconds),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    harness.model_options(parser)
    parser.add_argument("--rows", type=int, default=32)
    parser.add_argument("--budget", type=int, default=4096, help="micro-batch token budget")
    parser.add_argument("--max-response", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    args = harness.parse_args(parser, "packing", argv)
    if args.quick:
        args.size, args.rows, args.max_response, args.repeats = "tiny", 4, 16, 1

    import torch

    from videorl.models.loading import load_model

    on_gpu = torch.cuda.is_available()
    device, dtype = ("cuda", torch.bfloat16) if on_gpu else ("cpu", torch.float32)
    path = harness.model_dir(args.work, args.size, args.arch)
    variants = {
        "padded": ("sdpa", False),
        "packed-sdpa-mask": ("sdpa", True),
        "packed-sdpa-varlen": ("sdpa_varlen", True),
    }
    if on_gpu and importlib.util.find_spec("flash_attn") is not None:
        variants["packed-flash"] = ("flash_attention_2", True)
    results: dict[str, Any] = {}
    rows = None
    for name, (attention, packing) in variants.items():
        loaded = load_model(
            path, dtype=dtype, device=device, attn_implementation=attention, packing=packing
        )
        for param_name, param in loaded.model.named_parameters():
            param.requires_grad_("visual" not in param_name)  # the trainer's default: vision frozen
        if rows is None:
            rows = make_rows(loaded, args.rows, args.max_response, args.arch, args.seed)
        results[name] = timed_pass(loaded, *rows, args.budget, args.repeats)
        print(f"{name}: {results[name]['seconds']['median']:.3f} s", flush=True)
    base = results["padded"]["seconds"]["median"]
    table = [
        [
            name,
            r["micro_batches"],
            r["tokens_computed"],
            r["real_tokens"],
            f"{r['tokens_computed'] / r['real_tokens'] - 1:.0%}",
            harness.fmt(r["seconds"], " s"),
            f"{base / r['seconds']['median']:.2f}x",
        ]
        for name, r in results.items()
    ]
    print(
        harness.markdown_table(
            [
                "layout",
                "micro-batches",
                "tokens computed",
                "real tokens",
                "padding",
                "fwd+bwd per pass",
                "speed vs padded",
            ],
            table,
        )
    )
    harness.write_results(
        args.out,
        {
            "benchmark": "packing",
            "quick": args.quick,
            "size": args.size,
            "arch": args.arch,
            "rows": args.rows,
            "budget": args.budget,
            "max_response": args.max_response,
            "device": device,
            "dtype": str(dtype),
            "results": results,
            "machine": harness.machine(),
            "note": "packed-sdpa-mask builds an N x N block-diagonal mask; the varlen variants "
            "avoid both padding and cross-row attention work",
        },
    )


if __name__ == "__main__":
    main()
