"""Step breakdown: where a training step's time goes on the bench model (issues 11, 19).

Runs real `train_step`s of the quickstart recipe (OraRL with pruning) on the bench-size model
(~28 M parameters) with two mini-batches, so old log-probs are really computed, for two paths
side by side in one process: `old` (`rollout.share_prefill=false`,
`model.reuse_visual_embeddings=false`, `model.share_prompt_forward=false`: every sampled row
prefills its prompt, every forward re-encodes the video, every row of a log-prob pass or
the update runs its prompt) and `new` (the defaults). Both take the same batches from the same
seed, alternating which runs first; each phase and the whole step are reported as paired
per-step ratios old / new, and their outputs (rewards, losses, weights) are compared. Timers wrap
the step's calls from outside (no change to the trainer): video decoding (`VideoCache.get`),
prompt encoding (the HF processor), generation (`engine.generate`), rewards (`score`), old
log-probs (`logprobs_in_microbatches` in the update) and the update (`update_policy` minus its old
log-probs). Everything else in the step is framework overhead: building groups and
annotation rows, advantages, selection, collation, metrics. Detail lines (parts of those
phases, not added to them): the vision tower's time and how many videos it encoded per
distinct video, generation split into prompt prefill and token-by-token decoding, and
advantages + selection. Each is measured in wall-clock and in process CPU seconds (one torch
thread: CPU time is the work done, which other jobs on shared cores cannot stretch). The
first step is a warm-up, not counted. Targets: overhead under 10% of the step; new path:
prompt prefill under 8% of the step, whole step >= 1.4x faster than old, one vision-tower
encoding per distinct video.

    python bench/step.py [--steps 3] [--prompts 2] [--mini-batches 2] [--quick]
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import harness

PHASES = {
    "decode": "video decoding (decode-once cache)",
    "encode": "prompt encoding (HF processor)",
    "generate": "rollout generation (HF generate)",
    "reward": "rewards",
    "old_logprobs": "old log-probs",
    "update": "update (forward, backward, optimizer)",
    "other": "everything else (framework overhead)",
}
DETAILS = {  # parts of the phases above, not added to them
    "vision_tower": "(vision tower, inside generation and all forwards)",
    "generate_prefill": "(generation: prompt prefill; old: once per sampled row, new: per prompt)",
    "generate_decode": "(generation: token-by-token decoding)",
    "advantage_and_selection": "(advantages and selection, inside overhead)",
}
TARGET_OVERHEAD = 0.10
TARGET_PREFILL_SHARE = 0.08
TARGET_SPEEDUP = 1.4
PATHS = {  # name -> overrides
    "old": [
        "rollout.share_prefill=false",
        "model.reuse_visual_embeddings=false",
        "model.share_prompt_forward=false",
    ],
    "new": [],
}
COMPARED = ("reward/mean", "actor/loss", "response/length_mean", "rows/kept")


CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


class Stopwatch:
    """Wall-clock and process-CPU seconds inside wrapped callables and hooked modules, by
    name; plus counts. With one torch thread, CPU seconds are the work done, which other jobs
    on shared cores cannot stretch; wall seconds are what a user waits."""

    def __init__(self) -> None:
        self.seconds: dict[str, dict[str, float]] = {clock: defaultdict(float) for clock in CLOCKS}
        self.counts: dict[str, int] = defaultdict(int)
        self.generating = False

    @staticmethod
    def now() -> dict[str, float]:
        return {clock: read() for clock, read in CLOCKS.items()}

    def add(self, name: str, start: dict[str, float]) -> None:
        for clock, read in CLOCKS.items():
            self.seconds[clock][name] += read() - start[clock]

    def wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = self.now()
            generating, self.generating = self.generating, self.generating or name == "generate"
            try:
                return fn(*args, **kwargs)
            finally:
                self.generating = generating
                self.add(name, start)

        return timed

    def hook(self, module: Any, name_of: Callable[[dict[str, Any]], str | None]) -> list[Any]:
        """Time a module's forward calls; `name_of(kwargs)` names the bucket (None: skip)."""
        open_calls: list[tuple[str | None, dict[str, float]]] = []

        def pre(_: Any, args: Any, kwargs: dict[str, Any]) -> None:
            open_calls.append((name_of(kwargs), self.now()))

        def post(*_: Any) -> None:
            name, start = open_calls.pop()
            if name is not None:
                self.add(name, start)

        return [
            module.register_forward_pre_hook(pre, with_kwargs=True),
            module.register_forward_hook(post),
        ]


@contextmanager
def instrumented(state: Any, watch: Stopwatch) -> Iterator[Any]:
    """Wrap the step's calls with timers; yields the stages table for `train_step`. Undone
    on exit."""
    from videorl.rollout import prompting
    from videorl.trainer import update
    from videorl.trainer.step import STAGES

    stages = dataclasses.replace(
        STAGES,
        score=watch.wrap("reward", STAGES.score),
        advantages=watch.wrap("advantage", STAGES.advantages),
        select=watch.wrap("selection", STAGES.select),
        update=watch.wrap("update_total", STAGES.update),
    )
    patches = {
        "decode": (state.videos, "get"),
        "generate": (state.engine, "generate"),
        "encode": (prompting, "encode_record"),
        "old_logprobs": (update, "logprobs_in_microbatches"),
    }
    originals = {name: getattr(obj, attr) for name, (obj, attr) in patches.items()}
    for name, (obj, attr) in patches.items():
        setattr(obj, attr, watch.wrap(name, originals[name]))
    handles = _model_hooks(state, watch)
    try:
        yield stages
    finally:
        for name, (obj, attr) in patches.items():
            if obj is state.videos or obj is state.engine:
                delattr(obj, attr)  # back to the class method
            else:
                setattr(obj, attr, originals[name])
        for handle in handles:
            handle.remove()


def _model_hooks(state: Any, watch: Stopwatch) -> list[Any]:
    """Forward hooks timing the vision tower (counting its videos) and generation's
    prefill and decode forwards."""
    decoder = getattr(state.policy.model, "model", None)
    handles = []
    if decoder is not None and hasattr(decoder, "visual"):

        def vision(kwargs: dict[str, Any]) -> str:
            grid = kwargs.get("grid_thw")
            watch.counts["vision_tower_videos"] += 0 if grid is None else int(grid.shape[0])
            return "vision_tower"

        handles += watch.hook(decoder.visual, vision)
    if decoder is not None and hasattr(decoder, "language_model"):

        def generation(kwargs: dict[str, Any]) -> str | None:
            if not watch.generating:
                return None
            embeds = kwargs.get("inputs_embeds")
            return (
                "generate_prefill"
                if embeds is not None and embeds.shape[1] > 1
                else "generate_decode"
            )

        handles += watch.hook(decoder.language_model, generation)
    return handles


def breakdown(total: dict[str, float], watch: Stopwatch) -> dict[str, dict[str, float]]:
    """Seconds per phase and detail, for each clock; `other` is the step minus the phases."""
    out = {}
    for clock, seconds in watch.seconds.items():
        row = {
            name: seconds[name]
            for name in ("decode", "encode", "generate", "reward", "old_logprobs")
        }
        row["update"] = seconds["update_total"] - seconds["old_logprobs"]
        row["other"] = total[clock] - sum(row.values())
        row["advantage_and_selection"] = seconds["advantage"] + seconds["selection"]
        for name in ("vision_tower", "generate_prefill", "generate_decode"):
            row[name] = seconds[name]
        out[clock] = {**row, "step": total[clock]}
    return out


def measured_step(state: Any, indices: list[int], seed: int) -> tuple[dict, Any, Stopwatch]:
    """One instrumented `train_step` from a fixed RNG state (so both paths sample alike)."""
    import random

    import torch

    from videorl.trainer.step import train_step

    torch.manual_seed(seed)
    random.seed(seed)
    watch = Stopwatch()
    with instrumented(state, watch) as stages:
        start = watch.now()
        metrics = train_step(state, indices, stages)
        total = {clock: read() - start[clock] for clock, read in CLOCKS.items()}
    state.step += 1
    return breakdown(total, watch), metrics, watch


def summarize(steps: list[dict[str, Any]], keys: list[str]) -> dict[str, Any]:
    """Seconds and shares of the step per phase (median and range over steps)."""
    return {
        "seconds": {
            clock: {k: harness.spread([s[clock][k] for s in steps]) for k in [*keys, "step"]}
            for clock in CLOCKS
        },
        "share": {
            clock: {
                k: harness.spread([s[clock][k] / s[clock]["step"] for s in steps]) for k in keys
            }
            for clock in CLOCKS
        },
        "vision_tower_videos_per_distinct_video": harness.spread(
            [s["vision_tower_videos_per_distinct_video"] for s in steps], 2
        ),
    }


def paired_ratios(old: list[dict], new: list[dict], keys: list[str]) -> dict[str, Any]:
    """Per step old / new seconds of each phase (phases the new path removed are skipped)."""
    out = {}
    for clock in CLOCKS:
        out[clock] = {
            k: harness.spread([a[clock][k] / b[clock][k] for a, b in zip(old, new, strict=True)], 3)
            for k in [*keys, "step"]
            if all(b[clock][k] > 1e-6 for b in new)
        }
    return out


def _weights_gap(states: dict[str, Any]) -> float:
    old = dict(states["old"].policy.model.named_parameters())
    return max(
        float((p.detach() - old[name].detach()).abs().max())
        for name, p in states["new"].policy.model.named_parameters()
    )


def _report(result: dict[str, Any]) -> None:
    new, ratios = result["paths"]["new"], result["ratios"]
    rows = [
        [
            label,
            harness.fmt(result["paths"]["old"]["seconds"]["cpu"][k], " s"),
            harness.fmt(new["seconds"]["cpu"][k], " s"),
            harness.fmt(ratios["cpu"][k], "x") if k in ratios["cpu"] else "-",
            harness.fmt(new["share"]["cpu"][k], "", 3),
        ]
        for k, label in {**PHASES, **DETAILS}.items()
    ]
    rows.append(
        [
            "step",
            harness.fmt(result["paths"]["old"]["seconds"]["cpu"]["step"], " s"),
            harness.fmt(new["seconds"]["cpu"]["step"], " s"),
            harness.fmt(ratios["cpu"]["step"], "x"),
            f"1 (wall {harness.fmt(ratios['wall']['step'], 'x')} faster)",
        ]
    )
    print()
    print(
        harness.markdown_table(
            ["phase", "old: CPU s", "new: CPU s", "old / new (paired)", "new: share of step CPU"],
            rows,
        )
    )
    overhead = max(new["share"][clock]["other"]["median"] for clock in CLOCKS)
    prefill = new["share"]["cpu"]["generate_prefill"]["median"]
    speedup = ratios["cpu"]["step"]["median"]
    towers = {
        k: v["vision_tower_videos_per_distinct_video"]["median"] for k, v in result["paths"].items()
    }
    print(
        f"new path: overhead {100 * overhead:.2f}% (target < {100 * TARGET_OVERHEAD:.0f}%), "
        f"prompt prefill {100 * prefill:.1f}% of the step (target < {100 * TARGET_PREFILL_SHARE:.0f}%), "
        f"step {speedup:.2f}x faster than old (target >= {TARGET_SPEEDUP}x); vision tower per "
        f"distinct video: old {towers['old']:.0f}, new {towers['new']:.0f}; outputs: max |diff| "
        f"{result['same_outputs']['max_metric_diff']:.2g} (metrics), "
        f"{result['same_outputs']['max_weight_diff']:.2g} (weights)"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--steps", type=int, default=3, help="measured steps (after one warm-up step)"
    )
    parser.add_argument("--prompts", type=int, default=2, help="data.prompts_per_step")
    parser.add_argument("--response-tokens", type=int, default=32, help="rollout.max_new_tokens")
    parser.add_argument(
        "--mini-batches", type=int, default=2, help="optim.mini_batches (2: old log-probs computed)"
    )
    args = harness.parse_args(parser, "step", argv)
    if args.quick:
        args.steps, args.prompts, args.response_tokens = 1, 2, 8
    from videorl.trainer.build import build_state

    run = harness.RunFacts()
    size = "tiny" if args.quick else "bench"
    train = harness.synth_data(args.work, "temporal_grounding", n=16, seed=args.seed)
    overrides = [
        f"data.prompts_per_step={args.prompts}",
        f"rollout.max_new_tokens={args.response_tokens}",
        f"optim.mini_batches={args.mini_batches}",
        f"trainer.seed={args.seed}",
    ]
    model = harness.model_dir(args.work, size)
    configs = {
        name: harness.recipe(model, train, args.work, *overrides, *extra)
        for name, extra in PATHS.items()
    }
    states = {name: build_state(cfg, None) for name, cfg in configs.items()}
    batches = harness.endless(states["new"].sampler)
    steps: dict[str, list[dict[str, Any]]] = {name: [] for name in PATHS}
    gaps: list[float] = []
    for step in range(args.steps + 1):
        indices = next(batches)
        media = [states["new"].records[i].media for i in indices]
        videos = len({m.path for m in media if m is not None})
        order = list(PATHS) if step % 2 == 0 else list(reversed(PATHS))
        metrics = {}
        for name in order:
            row, metrics[name], watch = measured_step(states[name], indices, args.seed + step)
            print(
                f"  step {step} {name} {'(warm-up) ' if step == 0 else ''}wall {row['wall']['step']:6.2f} s "
                f"cpu {row['cpu']['step']:6.2f} s  "
                + "  ".join(f"{k} {row['cpu'][k]:.2f}" for k in PHASES),
                flush=True,
            )
            row["rows_total"], row["rows_kept"] = (
                metrics[name]["rows/total"],
                metrics[name]["rows/kept"],
            )
            row["vision_tower_videos_per_distinct_video"] = (
                watch.counts["vision_tower_videos"] / videos
            )
            if step > 0:
                steps[name].append(row)
        gaps.append(max(abs(metrics["old"][k] - metrics["new"][k]) for k in COMPARED))
    keys = [*PHASES, *DETAILS]
    paths = {name: summarize(rows, keys) for name, rows in steps.items()}
    result = {
        "benchmark": "step",
        "command": "python bench/step.py" + (" --quick" if args.quick else ""),
        "quick": args.quick,
        "model": {
            "arch": harness.ARCH,
            "size": size,
            **harness.model_params(states["new"].policy.model),
        },
        "settings": {
            "recipe": "configs/quickstart.yaml (OraRL, pruning)",
            "overrides": overrides,
            "paths": PATHS,
            "rollout_n": configs["new"].rollout.n,
            "measured_steps": args.steps,
            "warmup_steps": 1,
            "torch_threads": args.threads,
        },
        "phases": PHASES,
        "details": DETAILS,
        **paths["new"],  # the default path, as before this comparison
        "paths": paths,
        "ratios": paired_ratios(steps["old"], steps["new"], keys),
        "same_outputs": {
            "compared_metrics": list(COMPARED),
            "max_metric_diff": max(gaps),
            "max_weight_diff": _weights_gap(states),
        },
        "targets": {
            "overhead_share": TARGET_OVERHEAD,
            "prefill_share": TARGET_PREFILL_SHARE,
            "step_speedup": TARGET_SPEEDUP,
        },
        "target_overhead_share": TARGET_OVERHEAD,
        "rows": {"total": steps["new"][-1]["rows_total"], "kept": steps["new"][-1]["rows_kept"]},
        "steps": steps,
        **run.facts(),
    }
    _report(result)
    harness.write_results(args.out, result)


if __name__ == "__main__":
    main()
