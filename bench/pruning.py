"""Pruning: the update phase with OraRL selection (4 of 9 rows per group) against the same
groups unpruned (9 of 9) and against GRPO (the 8 policy rows), on the same rollouts (issue 11).

The rollouts of a bench-size model (~28 M parameters) are generated once with a fixed seed.
Each variant's rows go through `update_policy` (old log-probs when they are needed, forward,
backward, optimizer step), in two modes: one mini-batch (the OraRL recipe: old log-probs =
detached current log-probs, no extra pass) and two mini-batches (a real old-log-prob pass,
then two optimizer steps).

Time: one process; before every run the model and the optimizer (with its moments from one
warm-up update) are restored from the same snapshot; after an untimed warm-up run per mode,
the variants run in a rotating order; each repeat gives paired ratios, reported as median and
range. Both process CPU time and wall time are recorded: with one torch thread, CPU time is
the work the update does, which other jobs on shared cores cannot stretch (they stretch wall
time, by 2-3x at times here), so the headline ratios are CPU-time ratios.

Peak memory: a fresh subprocess per variant and mode, which restores the same snapshot and
runs the update once. Its peak is the kernel's resident-set high-water mark (VmHWM), reset
through /proc/self/clear_refs just before the update, so the number is the update's peak and
not start-up's; `ru_maxrss` is the fallback off Linux. Why not tracemalloc: it sees only
Python's allocator, not torch's C++ tensor memory. Why not torch's CPU memory profiler: on
this build its `[memory]` events are incomplete (a handful for a whole backward pass), so the
cumulative peak it gives is wrong. A fresh process per variant keeps the allocator's cached
free memory of one variant from hiding the peak of the next.

    python bench/pruning.py [--groups 1] [--repeats 3] [--quick]
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import re
import resource
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, TypedDict

import harness
import torch

VARIANTS = {
    "orarl_pruned": "OraRL, 4 of 9 rows per group",
    "unpruned": "same groups, 9 of 9 rows",
    "grpo": "GRPO, 8 policy rows",
}
MODES = {"one_mini_batch": 1, "two_mini_batches": 2}


class Published(TypedDict):
    speedup_step: float
    peak_memory_reduction: float
    model: str
    source: str


PUBLISHED: Published = {
    "speedup_step": 1.48,
    "peak_memory_reduction": 0.18,
    "model": "4B",
    "source": "docs/methods.md#reference-numbers",
}
TARGET_UPDATE_SPEEDUP = 1.8


def bench_recipe(args: argparse.Namespace) -> Any:
    size = "tiny" if args.quick else "bench"
    model = harness.model_dir(args.work, size)
    train = harness.synth_data(args.work, "temporal_grounding", n=16, seed=args.seed)
    return harness.recipe(
        model,
        train,
        args.work,
        f"data.prompts_per_step={args.groups}",
        f"rollout.max_new_tokens={args.response_tokens}",
        "optim.warmup_steps=0",
        f"trainer.seed={args.seed}",
    )


def rollouts(state: Any, groups: int, seed: int) -> dict[str, Any]:
    """The three row sets of one fixed-seed rollout: pruned, unpruned, GRPO."""
    from videorl.models.generate import SamplingParams
    from videorl.rollout.groups import add_annotation_rows, generate_groups
    from videorl.rollout.prompting import decode_prompts
    from videorl.trainer.stages import score

    cfg = state.cfg
    records, prompts, videos, *_ = decode_prompts(
        state.records[:groups], state.videos, state.policy, state.cfg.data
    )
    params = SamplingParams(
        n=cfg.rollout.n,
        max_new_tokens=cfg.rollout.max_new_tokens,
        temperature=cfg.rollout.temperature,
    )
    torch.manual_seed(seed)
    policy_rows = generate_groups(
        state.engine, records, prompts, videos, params, state.policy.tokenizer
    )
    tokenizer, eos = state.policy.tokenizer, state.policy.eos_token_ids[0]
    annotated = score(
        add_annotation_rows(
            policy_rows, tokenizer, eos, cfg.rollout.max_new_tokens, think=cfg.data.think
        ),
        cfg.reward,
    )
    return harness.selection_variants(annotated, cfg)


def shape(batch: Any) -> dict[str, int]:
    prompt_tokens = sum(p.length for p in batch.row_prompts())
    response_tokens = int(batch.response_lengths.sum())
    return {
        "rows": batch.num_rows,
        "prompt_tokens": prompt_tokens,
        "response_tokens": response_tokens,
        "tokens": prompt_tokens + response_tokens,
    }


def new_optimizer(state: Any) -> torch.optim.Optimizer:
    """The optimizer `build_state` makes, fresh."""
    optim = state.cfg.optim
    params = [p for p in state.policy.model.parameters() if p.requires_grad]
    return torch.optim.AdamW(
        params, lr=optim.lr, betas=optim.betas, weight_decay=optim.weight_decay
    )


def update(
    state: Any, optimizer: torch.optim.Optimizer, batch: Any, mini_batches: int
) -> dict[str, Any]:
    from videorl.trainer.update import UpdateContext, update_policy

    cfg = state.cfg
    ctx = UpdateContext(
        policy=state.policy,
        optimizer=optimizer,
        optim=replace(cfg.optim, mini_batches=mini_batches),
        loss=cfg.algorithm.loss,
        temperature=cfg.rollout.temperature,
    )
    return update_policy(ctx, batch)


def snapshot(state: Any, warmup: Any) -> dict[str, Any]:
    """Model weights and optimizer moments after one warm-up update (steady state)."""
    optimizer = new_optimizer(state)
    update(state, optimizer, warmup, 1)
    return {
        "model": copy.deepcopy(state.policy.model.state_dict()),
        "optimizer": copy.deepcopy(optimizer.state_dict()),
    }


def restore(state: Any, snap: dict[str, Any]) -> torch.optim.Optimizer:
    state.policy.model.load_state_dict(snap["model"])
    optimizer = new_optimizer(state)
    optimizer.load_state_dict(copy.deepcopy(snap["optimizer"]))
    gc.collect()
    return optimizer


def time_variants(
    state: Any, batches: dict[str, Any], snap: dict[str, Any], repeats: int
) -> dict[str, Any]:
    """Wall and CPU seconds per update of each variant and mode; the order rotates each repeat,
    and ratios are paired within a repeat. An untimed warm-up run of the largest variant in each
    mode first grows the allocator to its peak (else the first timed run pays for that)."""
    names = list(VARIANTS)
    runs: dict[str, dict[str, list[dict[str, float]]]] = {m: {v: [] for v in names} for m in MODES}
    for mini_batches in MODES.values():
        update(state, restore(state, snap), batches["unpruned"], mini_batches)
    for r in range(repeats):
        for mode, mini_batches in MODES.items():
            for name in names[r % len(names) :] + names[: r % len(names)]:
                optimizer = restore(state, snap)
                with harness.Elapsed() as elapsed:
                    update(state, optimizer, batches[name], mini_batches)
                runs[mode][name].append({"wall": elapsed.wall, "cpu": elapsed.cpu})
                print(
                    f"  repeat {r + 1}/{repeats} {mode:<17} {name:<13} cpu {elapsed.cpu:6.2f} s  "
                    f"wall {elapsed.wall:6.2f} s",
                    flush=True,
                )
    out: dict[str, Any] = {}
    for mode, per_variant in runs.items():
        out[mode] = {}
        for clock in ("cpu", "wall"):
            seconds = {v: [run[clock] for run in per_variant[v]] for v in names}
            pruned = seconds["orarl_pruned"]
            out[mode][clock] = {
                "seconds": {v: harness.spread(seconds[v]) for v in names},
                "speedup_vs_unpruned": harness.spread(
                    [u / p for u, p in zip(seconds["unpruned"], pruned, strict=True)]
                ),
                "speedup_vs_grpo": harness.spread(
                    [g / p for g, p in zip(seconds["grpo"], pruned, strict=True)]
                ),
            }
    return out


# ----- peak memory, one fresh process per variant and mode -----------------------------------


def _status_kb(field: str) -> int | None:
    try:
        text = Path("/proc/self/status").read_text()
    except OSError:
        return None
    match = re.search(rf"^{field}:\s+(\d+) kB", text, re.MULTILINE)
    return int(match.group(1)) if match else None


def _reset_peak() -> bool:
    """Reset the kernel's peak-RSS mark to the current RSS (Linux >= 4.0)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def memory_child(args: argparse.Namespace) -> None:
    """Run in a fresh process: restore the snapshot, run one update, print its peak."""
    from videorl.trainer.loop import build_state

    saved = torch.load(args.memory_child, weights_only=False)
    state = build_state(bench_recipe(args), None)
    optimizer = restore(state, saved["snapshot"])
    batch = saved["batches"][args.variant]
    before_kb = _status_kb("VmRSS")
    reset = _reset_peak()
    update(state, optimizer, batch, MODES[args.mode])
    peak_kb = _status_kb("VmHWM") if reset else None
    maxrss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = {
        "method": "VmHWM after clear_refs" if peak_kb is not None else "ru_maxrss (whole process)",
        "rss_before_mb": None if before_kb is None else round(before_kb / 1024, 1),
        "peak_mb": round((peak_kb or maxrss_kb) / 1024, 1),
    }
    if before_kb is not None and peak_kb is not None:
        result["added_by_update_mb"] = round((peak_kb - before_kb) / 1024, 1)
    print("MEMORY " + json.dumps(result))


def measure_memory(args: argparse.Namespace, saved: Path, modes: list[str]) -> dict[str, Any]:
    """Peak RSS of one update per (mode, variant, repeat), each in its own process. The
    processes run `--memory-jobs` at a time: only their memory is read, not their time."""
    jobs = [
        (mode, name, r) for mode in modes for name in VARIANTS for r in range(args.memory_repeats)
    ]
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for start in range(0, len(jobs), args.memory_jobs):
        wave = jobs[start : start + args.memory_jobs]
        running = [
            (
                job,
                subprocess.Popen(
                    _child_command(args, saved, job[1], job[0]),
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                ),
            )
            for job in wave
        ]
        for (mode, name, _), process in running:
            stdout, stderr = process.communicate()
            line = next((x for x in stdout.splitlines() if x.startswith("MEMORY ")), None)
            if line is None:
                raise RuntimeError(f"memory run {name}/{mode} failed:\n{stderr[-3000:]}")
            runs.setdefault((mode, name), []).append(json.loads(line[len("MEMORY ") :]))
            print(
                f"  memory {mode:<17} {name:<13} peak {runs[(mode, name)][-1]['peak_mb']:8.1f} MB",
                flush=True,
            )
    out: dict[str, Any] = {}
    for mode in modes:
        out[mode] = {
            name: {
                "method": runs[(mode, name)][0]["method"],
                "peak_mb": harness.spread([r["peak_mb"] for r in runs[(mode, name)]], 1),
                "added_by_update_mb": harness.spread(
                    [r.get("added_by_update_mb", 0.0) for r in runs[(mode, name)]], 1
                ),
            }
            for name in VARIANTS
        }
        pruned, unpruned = out[mode]["orarl_pruned"], out[mode]["unpruned"]
        out[mode]["peak_reduction_vs_unpruned"] = round(
            1 - pruned["peak_mb"]["median"] / unpruned["peak_mb"]["median"], 4
        )
        out[mode]["added_reduction_vs_unpruned"] = round(
            1
            - pruned["added_by_update_mb"]["median"]
            / max(unpruned["added_by_update_mb"]["median"], 1e-9),
            4,
        )
    return out


def _child_command(args: argparse.Namespace, saved: Path, variant: str, mode: str) -> list[str]:
    command = [
        sys.executable,
        __file__,
        "--memory-child",
        str(saved),
        "--variant",
        variant,
        "--mode",
        mode,
        "--work",
        str(args.work),
        "--threads",
        str(args.threads),
        "--seed",
        str(args.seed),
        "--groups",
        str(args.groups),
        "--response-tokens",
        str(args.response_tokens),
    ]
    return command + (["--quick"] if args.quick else [])


def _mb(memory: dict[str, Any] | None, name: str, key: str) -> str:
    return "-" if memory is None else f"{memory[name][key]['median']:.0f}"


def report(result: dict[str, Any]) -> None:
    rows = []
    for mode in MODES:
        cpu, wall, memory = (
            result["time"][mode]["cpu"],
            result["time"][mode]["wall"],
            result["memory"].get(mode),
        )
        for name, label in VARIANTS.items():
            shape_ = result["batches"][name]
            key = {
                "orarl_pruned": None,
                "unpruned": "speedup_vs_unpruned",
                "grpo": "speedup_vs_grpo",
            }[name]
            rows.append(
                [
                    mode.replace("_", " "),
                    label,
                    shape_["rows"],
                    shape_["tokens"],
                    harness.fmt(cpu["seconds"][name], " s"),
                    "1.00x" if key is None else harness.fmt(cpu[key], "x"),
                    harness.fmt(wall["seconds"][name], " s"),
                    "1.00x" if key is None else harness.fmt(wall[key], "x"),
                    _mb(memory, name, "peak_mb"),
                    _mb(memory, name, "added_by_update_mb"),
                ]
            )
    print()
    print(
        harness.markdown_table(
            [
                "update",
                "rows",
                "n rows",
                "tokens",
                "CPU time",
                "CPU time / pruned",
                "wall time",
                "wall time / pruned",
                "peak RSS MB",
                "added by the update MB",
            ],
            rows,
        )
    )
    for mode, memory in result["memory"].items():
        print(
            f"{mode}: peak RSS {100 * memory['peak_reduction_vs_unpruned']:.1f}% lower pruned vs unpruned "
            f"(memory added by the update {100 * memory['added_reduction_vs_unpruned']:.1f}% lower)"
        )
    print(
        f"published (4B, whole step): {PUBLISHED['speedup_step']}x faster steps, "
        f"{100 * PUBLISHED['peak_memory_reduction']:.0f}% less peak memory; target here: update >= {TARGET_UPDATE_SPEEDUP}x"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=1, help="prompts (groups) in the rollout")
    parser.add_argument("--response-tokens", type=int, default=32, help="rollout.max_new_tokens")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--memory-repeats",
        type=int,
        default=1,
        help="fresh processes per variant and mode (repeat runs agree within ~3%%)",
    )
    parser.add_argument("--memory-jobs", type=int, default=3, help="memory processes at a time")
    parser.add_argument("--memory-child", help=argparse.SUPPRESS)
    parser.add_argument("--variant", choices=list(VARIANTS), help=argparse.SUPPRESS)
    parser.add_argument("--mode", choices=list(MODES), help=argparse.SUPPRESS)
    args = harness.parse_args(parser, "pruning", argv)
    if args.memory_child:
        memory_child(args)
        return
    if args.quick:
        args.groups, args.response_tokens, args.repeats, args.memory_repeats = 1, 8, 1, 1
    from videorl.trainer.loop import build_state

    run = harness.RunFacts()
    state = build_state(bench_recipe(args), None)
    params, n = harness.model_params(state.policy.model), state.cfg.rollout.n
    batches = rollouts(state, args.groups, args.seed)
    snap = snapshot(state, batches["unpruned"])
    saved = args.work / "pruning-rollouts.pt"
    torch.save({"batches": batches, "snapshot": snap}, saved)
    print(f"rollouts: {args.groups} groups; timing {args.repeats} repeats", flush=True)
    timing = time_variants(state, batches, snap, args.repeats)
    del state, snap
    gc.collect()
    memory = measure_memory(args, saved, ["one_mini_batch"] if args.quick else list(MODES))
    result = {
        "benchmark": "pruning",
        "command": "python bench/pruning.py" + (" --quick" if args.quick else ""),
        "quick": args.quick,
        "model": {"arch": harness.ARCH, "size": "tiny" if args.quick else "bench", **params},
        "settings": {
            "groups": args.groups,
            "rollout_n": n,
            "response_tokens": args.response_tokens,
            "repeats": args.repeats,
            "memory_repeats": args.memory_repeats,
            "seed": args.seed,
            "modes": {m: f"optim.mini_batches={k}, epochs=1" for m, k in MODES.items()},
        },
        "batches": {name: shape(batch) for name, batch in batches.items()},
        "time": timing,
        "memory": memory,
        "published": PUBLISHED,
        "target_update_speedup": TARGET_UPDATE_SPEEDUP,
        **run.facts(),
    }
    report(result)
    harness.write_results(args.out, result)


if __name__ == "__main__":
    main()
