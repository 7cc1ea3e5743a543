"""The parts of the GPU check (`scripts/gpu/gpu_check.py` runs each in its own process).

Every part takes the `Settings` of the mode (real scale on a GPU, or `--cpu --tiny`) and a
`Recorder`, which rewrites the part's JSON after each measurement, so a part stopped at its
time limit keeps what it had measured. Rows are built by hand where generation is not the
point (random response tokens of realistic lengths behind a real video prompt), so the
update sees the published shapes without generating 2k tokens per row first.

MFU (part 3) counts the model FLOPs the update needs, over the bf16 peak of one H200
(790 TFLOP/s, an 8192^3 bf16 matmul measured on this machine kind):
- decoder layers: 6 N_layers T (forward + backward over every token T of every row);
- LM head: 6 d V R (logits only at the R response positions);
- attention: 6 h d_h L^2 per full-attention layer and row of length L (causal QK^T and AV,
  forward + backward);
- the frozen vision tower: 2 N_vision P forward only (P patches).
Recomputation under gradient checkpointing is not counted (model FLOPs, not hardware FLOPs).

Part 6 (long_video) uses verl's convention instead (`verl_flops`, verl/utils/flops_counter.py),
so that its MFU compares with verl's and Megatron's: 6 N T + 12 L H d_h sum_i s_i^2, with N the
text model's dense weights (the embedding and the LM head counted at every token) and no
vision term, over the H200's specified dense bf16 peak (989 TFLOP/s) and over the bf16 matmul
rate measured in the same part.
"""

from __future__ import annotations

import contextlib
import gc
import json
import subprocess
import sys
import time
import types
import xml.etree.ElementTree as ET
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parents[2]
H200_BF16_PEAK = 790e12
H200_BF16_SPEC = 989e12  # the datasheet's dense bf16 peak (H100 / H200 SXM), verl's divisor
VERL_CONVENTION = (
    "verl FlopsCounter: 6 N T + 12 L H d_h sum(s^2); N = L (3 d I + d (2 H + 2 K) d_h) + 2 V d; "
    "forward + backward, no recomputation, vision tower not counted"
)
PUBLISHED_PRUNING = {
    "step_speedup": 1.48,
    "peak_gb_unpruned": 62.4,
    "peak_gb_pruned": 50.9,
    "model": "4B",
    "source": "docs/methods.md#reference-numbers (OraRL)",
}
PROMPT = (
    "Watch the video and find when the person picks up the red cup. Give the start and end "
    "time in seconds inside <answer></answer>."
)


@dataclass(frozen=True)
class Settings:
    """Sizes of one mode. `cpu_tiny()` is the same script at sizes a CPU runs in seconds."""

    device: str = "cuda"
    dtype: str = "bfloat16"
    arch: str = "qwen3_5"  # parts 2, 4, 5: the headline model
    size: str = "4b"
    mfu_arch: str = "qwen3_vl"  # part 3: dense attention, packed rows (sdpa_varlen)
    mfu_size: str = "4b"
    frames: int = 32  # a video prompt: 32 frames of 448 x 448 = 3136 visual tokens (Qwen3)
    frame_px: int = 448
    response_tokens: tuple[int, int] = (1024, 2048)  # policy rows' lengths, drawn uniformly
    annotation_tokens: int = 40
    micro_batch_tokens: int = 32768  # the OraRL recipe's
    budgets: tuple[int, ...] = (8192, 16384, 32768, 65536)
    mfu_rows: int = 8
    repeats: int = 2
    gen_n: int = 8
    gen_tokens: int = 256  # 512 took 57 s a variant on the H200 (hybrid preset, HF kernels)
    step_tokens: int = 256
    step_warmup: bool = True
    long_frames: tuple[int, int] = (64, 4096)  # part 6: frames doubled from the first to the cap
    long_response_tokens: int = 1024
    long_budget_s: float = 120.0  # part 6: no doubling predicted to end after this
    matmul_n: int = 8192  # part 6: the n x n x n matmul whose rate is measured
    async_steps: int = 4  # part 7: steps per run (the first is the worker's start)
    async_layers: int = 4  # part 7: decoder layers of its policy (the preset's widths)
    async_tokens: int = 128  # part 7: rollout.max_new_tokens

    @classmethod
    def cpu_tiny(cls) -> Settings:
        return cls(
            device="cpu",
            dtype="float32",
            size="tiny",
            mfu_size="tiny",
            frames=4,
            frame_px=64,
            response_tokens=(16, 48),
            annotation_tokens=12,
            micro_batch_tokens=1024,
            budgets=(256, 1024),
            mfu_rows=4,
            repeats=1,
            gen_tokens=16,
            step_tokens=16,
            step_warmup=False,
            long_frames=(4, 8),
            long_response_tokens=16,
            long_budget_s=60.0,
            matmul_n=256,
            async_layers=2,
            async_tokens=16,
        )

    @property
    def cuda(self) -> bool:
        return self.device.startswith("cuda")

    @property
    def torch_dtype(self) -> torch.dtype:
        return getattr(torch, self.dtype)


class Recorder:
    """A part's results, rewritten to `path` after every `set`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.data: dict[str, Any] = {}

    def set(self, key: str, value: Any) -> None:
        self.data[key] = value
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(self.data, indent=2, default=str) + "\n")


def sync(settings: Settings) -> None:
    if settings.cuda:
        torch.cuda.synchronize()


def reset_peak(settings: Settings) -> None:
    """Start a peak-memory window: CUDA's allocator stats, or the process's resident-set
    high-water mark on a CPU (Linux: /proc/self/clear_refs)."""
    if settings.cuda:
        torch.cuda.reset_peak_memory_stats()
        return
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


def peak_gb(settings: Settings) -> float | None:
    if settings.cuda:
        return round(torch.cuda.max_memory_allocated() / 2**30, 2)
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 2**20, 2)
    except OSError:
        return None
    return None


def fake_video(settings: Settings, seed: int = 0) -> Any:
    """Decoded-video stand-in: random frames sampled at 2 fps, with their metadata."""
    generator = torch.Generator().manual_seed(seed)
    size, count = settings.frame_px, settings.frames
    frames = torch.randint(0, 255, (count, 3, size, size), dtype=torch.uint8, generator=generator)
    meta = types.SimpleNamespace(
        source_fps=30.0,
        fps=2.0,
        timestamps=[i / 2.0 for i in range(count)],
        width=size,
        height=size,
    )
    return types.SimpleNamespace(frames=frames, meta=meta)


def loaded_in_memory(arch: str, size: str, settings: Settings, attn: str, packing: Any) -> Any:
    """A preset built on the device (no disk), set up as `load_model` sets a checkpoint up."""
    from videorl.models.loading import LoadedModel
    from videorl.models.mrope import use_reference_rope_index
    from videorl.models.packing import resolve_packing
    from videorl.models.tiny import make_model

    model, processor = make_model(
        arch, size, device=settings.device, dtype=settings.torch_dtype, attn_implementation=attn
    )
    use_reference_rope_index(model)
    tokenizer = getattr(processor, "tokenizer", processor)
    tokenizer.padding_side = "left"
    return LoadedModel(
        model=model,
        tokenizer=tokenizer,
        processor=processor if processor is not tokenizer else None,
        model_type=model.config.model_type,
        packing=resolve_packing(model, packing),
    )


def prepare_for_training(loaded: Any) -> torch.optim.Optimizer:
    """As `build_state` does: frozen vision tower, gradient checkpointing, AdamW."""
    for name, param in loaded.model.named_parameters():
        if "visual" in name:
            param.requires_grad_(False)
    loaded.model.gradient_checkpointing_enable()
    params = [p for p in loaded.model.parameters() if p.requires_grad]
    return torch.optim.AdamW(params, lr=1e-6)


def group_batch(loaded: Any, settings: Settings, policy_rows: int = 8, seed: int = 0) -> Any:
    """One OraRL group: `policy_rows` random responses of realistic lengths with mixed rewards
    and one annotation row (reward 1), behind one video prompt."""
    from videorl.models.inputs import encode_prompt
    from videorl.rollout.batch import RolloutBatch

    generator = torch.Generator().manual_seed(seed)
    prompt = encode_prompt(loaded, PROMPT, video=fake_video(settings, seed))
    low, high = settings.response_tokens
    lengths = torch.randint(low, high + 1, (policy_rows,), generator=generator).tolist()
    lengths.append(settings.annotation_tokens)
    vocab = len(loaded.tokenizer)
    # ordinary tokens only: the special (vision, chat) tokens sit at both ends of our vocabulary
    responses = [torch.randint(20, vocab - 4, (n,), generator=generator) for n in lengths]
    pattern = [0.9, 0.1, 0.0, 0.7, 0.2, 0.0, 0.4, 0.8]
    rewards = torch.tensor([pattern[i % len(pattern)] for i in range(policy_rows)] + [1.0])
    rows = policy_rows + 1
    flags = torch.zeros(rows, dtype=torch.bool)
    return RolloutBatch(
        records=[None],
        prompts=[prompt],
        videos=[None],
        group_ids=torch.zeros(rows, dtype=torch.long),
        responses=responses,
        texts=[""] * rows,
        is_annotation=torch.arange(rows) == rows - 1,
        off_policy=flags,
        truncated=flags,
        rewards=rewards,
    )


def recipe(name: str) -> Any:
    from videorl.api import resolve_config_path
    from videorl.config import load_config

    return load_config(resolve_config_path(name), [])


def pruning_variants(group: Any) -> dict[str, Any]:
    """The OraRL recipe's selection (4 of 9), the same group unpruned (9 of 9), GRPO (8), as
    bench/harness.py builds them for bench/pruning.py."""
    sys.path.insert(0, str(ROOT / "bench"))
    import harness

    return harness.selection_variants(group, recipe("orarl"))


def timed_update(loaded: Any, optimizer: Any, batch: Any, settings: Settings, budget: int):
    """Seconds and peak memory of one `update_policy` (one mini-batch, the recipe's loss)."""
    from videorl.trainer.update import UpdateContext, update_policy

    cfg = recipe("orarl")
    ctx = UpdateContext(
        policy=loaded,
        optimizer=optimizer,
        optim=replace(cfg.optim, micro_batch_tokens=budget, mini_batches=1),
        loss=cfg.algorithm.loss,
        temperature=cfg.rollout.temperature,
    )
    sync(settings)
    reset_peak(settings)
    start = time.perf_counter()
    metrics = update_policy(ctx, batch)
    sync(settings)
    return time.perf_counter() - start, peak_gb(settings), metrics


def tokens_of(batch: Any) -> dict[str, int]:
    prompt = sum(p.length for p in batch.row_prompts())
    response = int(batch.response_lengths.sum())
    return {"rows": batch.num_rows, "prompt_tokens": prompt, "response_tokens": response}


def model_facts(loaded: Any) -> dict[str, Any]:
    params = sum(p.numel() for p in loaded.model.parameters())
    trainable = sum(p.numel() for p in loaded.model.parameters() if p.requires_grad)
    return {
        "model_type": loaded.model_type,
        "params_b": round(params / 1e9, 3),
        "trainable_b": round(trainable / 1e9, 3),
        "dtype": str(next(loaded.model.parameters()).dtype),
        "attn_implementation": loaded.model.config._attn_implementation,
        "packed_rows": loaded.packing,
    }


def part_pruning(settings: Settings, work: Path, rec: Recorder) -> None:
    """Part 2: update time and peak memory, pruned (4 of 9) vs unpruned (9 of 9) vs GRPO (8)."""
    from videorl.models.loading import load_model

    loaded = load_model(
        model_path(work, settings), dtype=settings.torch_dtype, device=settings.device
    )
    optimizer = prepare_for_training(loaded)
    variants = pruning_variants(group_batch(loaded, settings))
    rec.set("model", {**model_facts(loaded), "gradient_checkpointing": True, "frozen_vision": True})
    rec.set("rows", {k: tokens_of(b) for k, b in variants.items()})
    rec.set("micro_batch_tokens", settings.micro_batch_tokens)
    timed_update(loaded, optimizer, variants["grpo"], settings, settings.micro_batch_tokens)
    seconds: dict[str, list[float]] = {k: [] for k in variants}
    peaks: dict[str, list[float | None]] = {k: [] for k in variants}
    order = list(variants)
    for repeat in range(settings.repeats):
        for name in order[repeat % 3 :] + order[: repeat % 3]:  # rotate the order
            took, peak, _ = timed_update(
                loaded, optimizer, variants[name], settings, settings.micro_batch_tokens
            )
            seconds[name].append(round(took, 3))
            peaks[name].append(peak)
        rec.set("seconds", seconds)
        rec.set("peak_gb", peaks)
    median = {k: sorted(v)[len(v) // 2] for k, v in seconds.items()}
    peak = {k: max(v) if None not in v else None for k, v in peaks.items()}
    ratios = {
        "update_speedup_vs_unpruned": round(median["unpruned"] / median["orarl_pruned"], 3),
        "update_speedup_vs_grpo": round(median["grpo"] / median["orarl_pruned"], 3),
    }
    if peak["orarl_pruned"] and peak["unpruned"]:
        ratios["peak_memory_reduction_vs_unpruned"] = round(
            1 - peak["orarl_pruned"] / peak["unpruned"], 3
        )
    rec.set("median_seconds", median)
    rec.set("ratios", ratios)
    rec.set("published", PUBLISHED_PRUNING)


def update_flops(loaded: Any, batch: Any) -> dict[str, float]:
    """Model FLOPs of one update over `batch` (module docstring)."""
    from videorl.distributed import decoder_layers

    model = loaded.model
    text = model.config.get_text_config()
    layers = sum(p.numel() for layer in decoder_layers(model) for p in layer.parameters())
    lengths = [
        p.length + int(r.numel()) for p, r in zip(batch.row_prompts(), batch.responses, strict=True)
    ]
    tokens, response = sum(lengths), int(batch.response_lengths.sum())
    kinds = getattr(text, "layer_types", None) or ["full_attention"] * text.num_hidden_layers
    head_dim = getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads
    attention = (6 * kinds.count("full_attention") * text.num_attention_heads * head_dim) * sum(
        n * n for n in lengths
    )
    visual = getattr(getattr(model, "model", None), "visual", None)
    patches = sum(
        int(p.vision["video_grid_thw"].prod(-1).sum())
        for p in batch.row_prompts()
        if "video_grid_thw" in p.vision
    )
    vision = 2 * sum(p.numel() for p in visual.parameters()) * patches if visual else 0
    dense = 6 * layers * tokens + 6 * text.hidden_size * text.vocab_size * response
    return {
        "dense": dense,
        "attention": attention,
        "vision": vision,
        "total": dense + attention + vision,
    }


def part_mfu(settings: Settings, work: Path, rec: Recorder) -> None:
    """Part 3: update tokens/s and MFU over micro-batch token budgets, up to the largest
    that fits (packed rows with sdpa_varlen, gradient checkpointing, frozen vision)."""
    loaded = loaded_in_memory(settings.mfu_arch, settings.mfu_size, settings, "sdpa_varlen", "auto")
    optimizer = prepare_for_training(loaded)
    batch = group_batch(loaded, settings, policy_rows=settings.mfu_rows - 1)
    batch = replace(batch, advantages=torch.randn(batch.num_rows)[:, None] * batch.response_mask())
    flops = update_flops(loaded, batch)
    rec.set("model", {**model_facts(loaded), "gradient_checkpointing": True})
    rec.set("rows", tokens_of(batch))
    rec.set("flops", flops)
    rec.set("peak_flops", H200_BF16_PEAK)
    results = []
    timed_update(loaded, optimizer, batch, settings, settings.budgets[0])  # warm-up
    for budget in settings.budgets:
        try:
            took, peak, _ = timed_update(loaded, optimizer, batch, settings, budget)
        except torch.cuda.OutOfMemoryError:
            optimizer.zero_grad(set_to_none=True)
            results.append({"micro_batch_tokens": budget, "status": "out of memory"})
            rec.set("budgets", results)
            break
        tokens = sum(tokens_of(batch)[k] for k in ("prompt_tokens", "response_tokens"))
        results.append(
            {
                "micro_batch_tokens": budget,
                "seconds": round(took, 3),
                "tokens_per_s": round(tokens / took, 1),
                "mfu": float(f"{flops['total'] / took / H200_BF16_PEAK:.4g}"),
                "peak_gb": peak,
            }
        )
        rec.set("budgets", results)
    done = [r for r in results if "mfu" in r]
    if done:
        rec.set("best", max(done, key=lambda r: r["tokens_per_s"]))


def verl_flops(text: Any, seqlens: list[int]) -> dict[str, float]:
    """Forward + backward FLOPs of rows of `seqlens` tokens in verl's convention (module
    docstring): dense 6 N T, attention 12 L H d_h sum s^2 (every pair, causal or not)."""
    heads, kv = text.num_attention_heads, text.num_key_value_heads
    head_dim = getattr(text, "head_dim", None) or text.hidden_size // heads
    d, layers = text.hidden_size, text.num_hidden_layers
    per_layer = 3 * d * text.intermediate_size + d * (2 * heads + 2 * kv) * head_dim
    n = layers * per_layer + 2 * text.vocab_size * d
    dense = 6 * n * sum(seqlens)
    attention = 12 * layers * heads * head_dim * sum(s * s for s in seqlens)
    return {"dense_params": n, "dense": dense, "attention": attention, "total": dense + attention}


def matmul_rate(settings: Settings, repeats: int = 50) -> dict[str, Any]:
    """FLOP/s of an n x n x n matmul in the mode's dtype: 2 n^3 per product, `repeats`
    products after a warm-up."""
    n = settings.matmul_n
    a, b = (torch.randn(n, n, device=settings.device, dtype=settings.torch_dtype) for _ in "ab")
    for _ in range(3):
        a @ b
    sync(settings)
    start = time.perf_counter()
    for _ in range(repeats):
        a @ b
    sync(settings)
    took = time.perf_counter() - start
    return {"n": n, "dtype": settings.dtype, "flops_per_s": 2 * n**3 * repeats / took}


def long_video_batch(loaded: Any, settings: Settings, frames: int) -> Any:
    """One row: a prompt with `frames` frames and `long_response_tokens` random response
    tokens, advantage 1 on every response token."""
    from videorl.models.inputs import encode_prompt
    from videorl.rollout.batch import RolloutBatch

    video = fake_video(replace(settings, frames=frames), seed=frames)
    prompt = encode_prompt(loaded, PROMPT, video=video)
    generator = torch.Generator().manual_seed(frames)
    vocab = len(loaded.tokenizer)
    response = torch.randint(20, vocab - 4, (settings.long_response_tokens,), generator=generator)
    one = torch.zeros(1, dtype=torch.bool)
    return RolloutBatch(
        records=[None],
        prompts=[prompt],
        videos=[None],
        group_ids=torch.zeros(1, dtype=torch.long),
        responses=[response],
        texts=[""],
        is_annotation=one,
        off_policy=one,
        truncated=one,
        rewards=torch.ones(1),
        advantages=torch.ones(1, response.numel()),
    )


def lift_video_cap(loaded: Any, pixels: int) -> None:
    """Let one video reach `pixels` pixels in all: the published Qwen3-VL processor caps a
    video at 24,576 visual tokens, below the rows this part measures."""
    video = loaded.processor.video_processor
    video.size = {"shortest_edge": video.size["shortest_edge"], "longest_edge": pixels}


def update_or_oom(loaded: Any, optimizer: Any, batch: Any, settings: Settings) -> Any:
    """`timed_update` with the row in one micro-batch; None when CUDA ran out of memory (the
    gradients dropped and the cache emptied, outside the handler that holds the frames)."""
    tokens = batch.row_prompts()[0].length + int(batch.responses[0].numel())
    try:
        return timed_update(loaded, optimizer, batch, settings, tokens)
    except torch.cuda.OutOfMemoryError:
        pass
    optimizer.zero_grad(set_to_none=True)
    gc.collect()
    if settings.cuda:
        torch.cuda.empty_cache()
    return None


def bytes_per_token(runs: list[dict[str, Any]]) -> dict[str, float] | None:
    """Peak GB = a + b * tokens through the last two rows that fit, and the tokens at which
    that line reaches the device's memory (an extrapolation, not a measurement)."""
    fit = [r for r in runs if r.get("peak_gb") is not None]
    if len(fit) < 2 or fit[-1]["tokens"] == fit[-2]["tokens"]:
        return None
    (t0, g0), (t1, g1) = ((r["tokens"], r["peak_gb"]) for r in fit[-2:])
    slope = (g1 - g0) / (t1 - t0)
    line = {"gb_at_zero_tokens": round(g0 - slope * t0, 2), "kb_per_token": round(slope * 2**20, 1)}
    if torch.cuda.is_available() and slope > 0:
        capacity = torch.cuda.get_device_properties(0).total_memory / 2**30
        line["device_gb"] = round(capacity, 1)
        line["tokens_at_device_gb"] = int((capacity - line["gb_at_zero_tokens"]) / slope)
    return line


def long_video_run(
    loaded: Any, optimizer: Any, settings: Settings, frames: int, rates: dict[str, float]
) -> dict[str, Any]:
    """One update of one row of `frames` frames: tokens, seconds, tokens/s, peak memory and
    MFU against each of `rates` (`status` "out of memory" when it did not fit)."""
    start = time.perf_counter()
    batch = long_video_batch(loaded, settings, frames)
    encode_s = time.perf_counter() - start
    prompt = batch.row_prompts()[0]
    tokens = prompt.length + int(batch.responses[0].numel())
    grid = prompt.vision["video_grid_thw"]
    run: dict[str, Any] = {
        "frames": frames,
        "tokens": tokens,
        "visual_tokens": int(grid.prod(-1).sum()) // 4,  # merged 2 x 2
        "encode_s": round(encode_s, 2),
    }
    timed = update_or_oom(loaded, optimizer, batch, settings)
    if timed is None:
        return {**run, "status": "out of memory"}
    took, peak, _ = timed
    flops = verl_flops(loaded.model.config.get_text_config(), [tokens])["total"]
    run.update(status="ok", seconds=round(took, 3), tokens_per_s=round(tokens / took, 1))
    run.update(peak_gb=peak, tflops_per_s=round(flops / took / 1e12, 3))
    run.update({f"mfu_{k}": float(f"{flops / took / r:.4g}") for k, r in rates.items()})
    return run


def part_long_video(settings: Settings, work: Path, rec: Recorder) -> None:
    """Part 6: tokens/s and peak memory of one update (`update_policy`: forward + backward of
    the policy loss and the optimizer step) of one long-video row at sequence-parallel size 1,
    frames doubled until out of memory, the frame cap, or an update predicted (by its FLOPs)
    to end past `long_budget_s`; the longest that fitted is the result."""
    began = time.perf_counter()
    loaded = loaded_in_memory(settings.mfu_arch, settings.mfu_size, settings, "sdpa_varlen", "auto")
    first, cap = settings.long_frames
    lift_video_cap(loaded, cap * settings.frame_px**2)
    optimizer = prepare_for_training(loaded)
    matmul = matmul_rate(settings)
    rates = {"spec": H200_BF16_SPEC, "measured": matmul["flops_per_s"]}
    rec.set("model", {**model_facts(loaded), "gradient_checkpointing": True, "frozen_vision": True})
    rec.set("sequence_parallel_size", 1)
    rec.set("flops_convention", VERL_CONVENTION)
    rec.set("peak_flops", {"spec_h200_dense_bf16": H200_BF16_SPEC, "measured_matmul": matmul})
    rec.set("frame_px", settings.frame_px)
    rec.set("response_tokens", settings.long_response_tokens)
    update_or_oom(loaded, optimizer, long_video_batch(loaded, settings, first), settings)  # warm-up
    runs: list[dict[str, Any]] = []
    frames, stopped = first, f"the frame cap ({cap})"
    while frames <= cap:
        runs.append(long_video_run(loaded, optimizer, settings, frames, rates))
        rec.set("runs", runs)
        if runs[-1]["status"] != "ok":
            stopped = f"out of memory at {frames} frames"
            break
        fitted = [r for r in runs if r["status"] == "ok"]
        rec.set("longest_fit", fitted[-1])
        rec.set("memory_line", bytes_per_token(fitted))
        predicted = next_seconds(loaded, runs[-1], settings.long_response_tokens)
        if time.perf_counter() - began + predicted > settings.long_budget_s:
            stopped = f"the time budget: {2 * frames} frames predicted to take {predicted:.0f} s"
            break
        frames *= 2
    rec.set("stopped_by", stopped)


def next_seconds(loaded: Any, run: dict[str, Any], response: int) -> float:
    """The next doubling's encode + update seconds: encoding scales with the frames, the update
    with its FLOPs (the prompt doubled, an upper bound: its fixed text doubles too)."""
    text = loaded.model.config.get_text_config()
    tokens = 2 * run["tokens"] - response
    ratio = verl_flops(text, [tokens])["total"] / verl_flops(text, [run["tokens"]])["total"]
    return 2 * run["encode_s"] + ratio * run["seconds"]


def model_path(work: Path, settings: Settings) -> Path:
    return work / "models" / f"{settings.arch}-{settings.size}"


def engine_variants() -> list[bool | None]:
    """[True, False] when the HF engine takes `share_prefill`; [None] (n/a) otherwise."""
    import inspect

    from videorl.rollout.engine import HFEngine

    return [True, False] if "share_prefill" in inspect.signature(HFEngine).parameters else [None]


def part_generation(settings: Settings, work: Path, rec: Recorder) -> None:
    """Part 4: HF engine tokens/s, n samples of exactly `gen_tokens` from one video prompt
    (end-of-sequence disabled), with and without the shared prompt prefill."""
    from videorl.models.generate import SamplingParams
    from videorl.models.inputs import encode_prompt
    from videorl.models.loading import load_model
    from videorl.rollout.engine import HFEngine

    loaded = load_model(
        model_path(work, settings), dtype=settings.torch_dtype, device=settings.device
    )
    never = loaded.tokenizer.convert_tokens_to_ids("<|video_pad|>")  # banned: never sampled
    loaded.model.generation_config.eos_token_id = [never]
    prompt = encode_prompt(loaded, PROMPT, video=fake_video(settings))
    rec.set("model", model_facts(loaded))
    rec.set("prompt_tokens", prompt.length)
    rec.set("n", settings.gen_n)
    rec.set("new_tokens", settings.gen_tokens)
    runs = {}
    for share in engine_variants():
        engine = HFEngine(loaded) if share is None else HFEngine(loaded, share_prefill=share)
        engine.generate([prompt], SamplingParams(n=settings.gen_n, max_new_tokens=4))
        params = SamplingParams(n=settings.gen_n, max_new_tokens=settings.gen_tokens)
        sync(settings)
        start = time.perf_counter()
        (generation,) = engine.generate([prompt], params)
        sync(settings)
        took = time.perf_counter() - start
        tokens = sum(int(t.numel()) for t in generation.token_ids)
        key = {True: "shared_prefill", False: "unshared_prefill", None: "engine_default"}[share]
        runs[key] = {
            "seconds": round(took, 3),
            "tokens": tokens,
            "tokens_per_s": round(tokens / took, 1),
        }
        rec.set("runs", runs)
    if "shared_prefill" in runs:
        speedup = runs["shared_prefill"]["tokens_per_s"] / runs["unshared_prefill"]["tokens_per_s"]
        rec.set("share_prefill_speedup", round(speedup, 3))
    else:
        rec.set("share_prefill", "n/a: this HFEngine has no share_prefill option")


def step_overrides(settings: Settings, work: Path, train: Path, out: Path) -> list[str]:
    """The OraRL recipe at the preset's sizes, one prompt a step (parts 5 and 7)."""
    pixels = settings.frame_px * settings.frame_px
    return [
        f"model.path={model_path(work, settings)}",
        f"model.dtype={settings.dtype}",
        f"data.train={train}",
        "data.val=null",
        "data.prompts_per_step=1",
        f"rollout.max_new_tokens={settings.step_tokens}",
        f"video.max_frames={settings.frames}",
        f"video.min_pixels={pixels}",
        f"video.max_pixels={pixels}",
        "video.factor=32",
        f"optim.micro_batch_tokens={settings.micro_batch_tokens}",
        f"trainer.device={settings.device}",
        f"trainer.output_dir={out}",
        "trainer.nproc=1",
        "trainer.tensorboard=false",
        "trainer.val_every=0",
        "trainer.save_every=0",
        "optim.warmup_steps=0",
    ]


def step_data(work: Path) -> Path:
    """Two synthetic temporal-grounding videos (a rerun in the same --work reuses them)."""
    from videorl.data.synth import synthesize

    train = work / "step_data" / "records.jsonl"
    if train.is_file():
        return train
    return synthesize(train.parent, ["temporal_grounding"], n=2, seed=0)


def step_config(settings: Settings, work: Path, train: Path) -> Any:
    from videorl.api import resolve_config_path
    from videorl.config import load_config

    overrides = step_overrides(settings, work, train, work / "step_run")
    return load_config(resolve_config_path("orarl"), overrides)


def part_step(settings: Settings, work: Path, rec: Recorder) -> None:
    """Part 5: where one full OraRL step's time goes (bench/step.py's timers, with a CUDA
    synchronize at every timer edge so GPU work is charged to the phase that queued it)."""
    sys.path.insert(0, str(ROOT / "bench"))
    import step as step_bench

    from videorl.trainer.build import build_state
    from videorl.trainer.step import train_step

    class SyncedStopwatch(step_bench.Stopwatch):
        @staticmethod
        def now() -> dict[str, float]:
            sync(settings)
            return {clock: read() for clock, read in step_bench.CLOCKS.items()}

    cfg = step_config(settings, work, step_data(work))
    state = build_state(cfg, None)
    rec.set(
        "model",
        {**model_facts(state.policy), "recipe": "orarl (scripts/gpu/gpu_parts.py overrides)"},
    )
    indices = next(iter(state.sampler))
    for _ in range(2 if settings.step_warmup else 1):  # the last step is the one reported
        watch = SyncedStopwatch()
        with step_bench.instrumented(state, watch) as stages:
            start = watch.now()
            metrics = train_step(state, indices, stages)
            total = {clock: read() - start[clock] for clock, read in step_bench.CLOCKS.items()}
        state.step += 1
    seconds = step_bench.breakdown(total, watch)["wall"]
    rec.set("seconds", {k: round(v, 3) for k, v in seconds.items()})
    rec.set("rows", {"total": metrics["rows/total"], "kept": metrics["rows/kept"]})
    rec.set("peak_gb", round(metrics["perf/peak_mem_gb"], 2) if settings.cuda else None)


ASYNC_VARIANTS = {  # both on the HF engine: async workers have no vLLM weight transfer yet
    "sync": ["rollout.engine=hf", "rollout.mode=sync"],
    # the worker on the trainer's device: its weights arrive through CUDA IPC handles
    "async, staleness 1": ["rollout.engine=hf", "rollout.mode=async", "rollout.max_staleness=1"],
}


def async_model(settings: Settings, work: Path) -> Path:
    """Part 7's policy: the dense-attention preset (part 3's) at `async_layers` decoder
    layers, so that two runs of a few steps fit the part's limit (the 4B hybrid preset's
    HF generation took 11 s a step on the H200, with the reference linear-attention kernels)."""
    from videorl.api import make_tiny

    path = work / "models" / f"{settings.mfu_arch}-{settings.mfu_size}-{settings.async_layers}l"
    if not (path / "config.json").is_file():  # `videorl make-tiny`, in this process
        make_tiny(
            path,
            settings.mfu_arch,
            size=settings.mfu_size,
            layers=settings.async_layers,
            device=settings.device,
            dtype=settings.dtype,
        )
    return path


def part_async(settings: Settings, work: Path, rec: Recorder) -> None:
    """Part 7: `rollout.mode: async` on the device, the trainer and one rollout worker
    sharing it, against the synchronous loop: `videorl train` as a user runs it, part 5's
    OraRL settings on `async_model` for `async_steps` steps of `async_tokens`; steps/s over
    the steps after the first (the worker's start)."""
    from videorl.trainer.metrics import read_metrics

    train, model = step_data(work), async_model(settings, work)
    rec.set("model", str(model.name))
    devices = [f"rollout.devices=[{settings.device}:0]"] if settings.cuda else []
    for name, variant in ASYNC_VARIANTS.items():
        out = work / "async_runs" / name.replace(", ", "-").replace(" ", "_")
        overrides = [*step_overrides(settings, work, train, out), *variant, f"model.path={model}"]
        overrides += ["trainer.epochs=null", f"trainer.steps={settings.async_steps}"]
        overrides += [f"rollout.max_new_tokens={settings.async_tokens}"]
        overrides += devices if "rollout.mode=async" in variant else []
        command = [sys.executable, "-m", "videorl", "train", "orarl", *overrides, "--overwrite"]
        began = time.perf_counter()
        done = subprocess.run(
            command,
            check=False,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=ROOT,
        )
        if done.returncode:
            rec.set(name, {"error": (done.stdout.strip().splitlines() or ["?"])[-1]})
            continue
        rows = list(read_metrics(out / "metrics.jsonl"))
        steady = rows[1:] or rows
        step_s = sum(r["time/step"] for r in steady) / len(steady)
        run = {"steps_per_s": round(1 / step_s, 3), "wall_s": round(time.perf_counter() - began, 1)}
        run |= {k: round(v, 3) for k, v in steady[-1].items() if k.startswith("async/")}
        rec.set(name, run)
    runs = {k: v for k, v in rec.data.items() if isinstance(v, dict) and "steps_per_s" in v}
    if len(runs) == len(ASYNC_VARIANTS):
        speedup = runs["async, staleness 1"]["steps_per_s"] / runs["sync"]["steps_per_s"]
        rec.set("speedup", round(speedup, 2))


def tests_command(settings: Settings, work: Path, select: str | None = None) -> list[str]:
    """Part 1: pytest over scripts/gpu/tests on the device (`VIDEORL_TEST_DEVICE`, see `tests_env`),
    its results in `work/tests.xml` (junit)."""
    command = [sys.executable, "-m", "pytest", str(ROOT / "scripts" / "gpu" / "tests"), "-q"]
    command += ["-p", "no:cacheprovider", f"--junitxml={work / 'tests.xml'}", "-W", "ignore"]
    return command + (["-k", select] if select else [])


def tests_env(settings: Settings) -> dict[str, str]:
    return {"VIDEORL_TEST_DEVICE": settings.device}


def tests_result(work: Path, select: str | None = None) -> dict[str, Any]:
    """Counts and failing tests from pytest's junit XML."""
    report = work / "tests.xml"
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    failures = []
    cases = ET.parse(report).getroot().iter("testcase") if report.is_file() else []
    for case in cases:
        name = f"{case.get('classname', '').split('.')[-1]}::{case.get('name')}"
        if case.find("failure") is not None or case.find("error") is not None:
            counts["failed"] += 1
            failures.append(name)
        elif case.find("skipped") is not None:
            counts["skipped"] += 1
        else:
            counts["passed"] += 1
    return {"counts": counts, "failures": failures, "select": select}


PARTS = {
    "tests": None,  # run as pytest itself (tests_command), not as a part process
    "pruning": part_pruning,
    "mfu": part_mfu,
    "generation": part_generation,
    "step": part_step,
    "async": part_async,
    "long_video": part_long_video,
}
