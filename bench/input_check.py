"""What `trainer.check_inputs` (input fingerprints, issue 46) costs.

Two measurements:

- `prompts`: fingerprinting one prompt of a given video size (token ids, grids, timestamps,
  SHA-1 of `pixel_values_videos`), as the rollout does once per prompt (`record`), as each
  later forward's check does for the same tensors (`check`: the SHA-1 is remembered per
  tensor object and version) and for a copy of them (`check_copy`: what an async trainer
  checks after a batch came through the mailbox, hashed again). Sizes: 64 frames at
  1036 x 560 (a 720p file under the default `video.*`), 16 frames at 448 x 252.
- `steps`: real `train_step`s of the quickstart recipe on the bench model, alternating
  `trainer.check_inputs` on and off in one process on the same batches; the time spent
  inside fingerprinting (recording and every check) is summed per step, and its share of the
  step reported, beside the two arms' step times (noisy on shared cores: the summed time is
  the figure to read).

    python bench/input_check.py [--steps 4] [--quick]
    python bench/input_check.py --table   # write the results' table into docs/long_videos.md
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from typing import Any

import harness
import torch

PAGE = harness.ROOT / "docs" / "long_videos.md"
SCRIPT = "bench/input_check.py"
SIZES = {"64f_1036x560": (64, 560, 1036), "16f_448x252": (16, 252, 448)}
PATCH, TEMPORAL, CHANNELS = 14, 2, 3


def synthetic_prompt(frames: int, height: int, width: int, tokens: int = 2000) -> Any:
    """A prompt of Qwen2.5-VL's layout for `frames` frames of `height x width`."""
    from videorl.models.inputs import PromptEncoding

    grid = (frames // TEMPORAL, height // PATCH, width // PATCH)
    rows = grid[0] * grid[1] * grid[2]
    pixels = torch.rand(rows, CHANNELS * TEMPORAL * PATCH * PATCH)
    vision = {
        "pixel_values_videos": pixels,
        "video_grid_thw": torch.tensor([grid]),
        "second_per_grid_ts": torch.tensor([1.0]),
    }
    return PromptEncoding(input_ids=torch.randint(0, 150000, (tokens,)), vision=vision)


def _timed(fn: Any) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def measure_prompts(repeats: int, sizes: dict[str, tuple[int, int, int]]) -> dict[str, Any]:
    """Per size: the three timings of `repeats` fresh prompts (built and copied untimed)."""
    from videorl.models.fingerprint import fingerprint

    out = {}
    for name, (frames, height, width) in sizes.items():
        times: dict[str, list[float]] = {"record": [], "check": [], "check_copy": []}
        for _ in range(repeats):
            prompt = synthetic_prompt(frames, height, width)
            times["record"].append(_timed(lambda p=prompt: fingerprint(p)))
            times["check"].append(_timed(lambda p=prompt: fingerprint(p)))
            vision = {k: v.clone() for k, v in prompt.vision.items()}
            copy = dataclasses.replace(prompt, vision=vision)
            del prompt
            times["check_copy"].append(_timed(lambda p=copy: fingerprint(p)))
        results: dict[str, Any] = {k: harness.spread(v, 5) for k, v in times.items()}
        results["pixel_mb"] = round(copy.vision["pixel_values_videos"].nbytes / 1e6, 1)
        out[name] = results
        print(name, {k: v if isinstance(v, float) else v["median"] for k, v in results.items()})
    return out


def measure_steps(args: argparse.Namespace) -> dict[str, Any]:
    from videorl.rollout import fingerprints
    from videorl.trainer.build import build_state
    from videorl.trainer.step import train_step

    size = "tiny" if args.quick else "bench"
    train = harness.synth_data(args.work, "temporal_grounding", n=16, seed=args.seed)
    overrides = [f"data.prompts_per_step={args.prompts}", "optim.mini_batches=2"]
    model = harness.model_dir(args.work, size)
    cfg = harness.recipe(model, train, args.work, *overrides)
    state = build_state(cfg, None)
    spent = [0.0]
    real = fingerprints.fingerprint

    def timed(*a: Any, **k: Any) -> Any:
        start = time.perf_counter()
        try:
            return real(*a, **k)
        finally:
            spent[0] += time.perf_counter() - start

    fingerprints.fingerprint = timed
    batches = harness.endless(state.sampler)
    rows: dict[str, list[dict[str, float]]] = {"on": [], "off": []}
    for step in range(args.steps + 1):
        indices = next(batches)
        order = ("on", "off") if step % 2 == 0 else ("off", "on")
        for arm in order:
            trainer = dataclasses.replace(cfg.trainer, check_inputs=arm == "on")
            state.cfg = dataclasses.replace(cfg, trainer=trainer)
            spent[0] = 0.0
            with harness.Elapsed() as clock:
                metrics = train_step(state, indices)
            if step:  # the first is a warm-up
                rows[arm].append({"wall": clock.wall, "cpu": clock.cpu, "fingerprint": spent[0]})
            print(
                f"step {step} {arm}: {clock.wall:.2f} s, fingerprints {spent[0] * 1e3:.2f} ms, "
                f"rows {metrics.get('actor/rows')}"
            )
    fingerprints.fingerprint = real
    on = rows["on"]
    share = [r["fingerprint"] / r["cpu"] for r in on]
    return {
        "model": size,
        "prompts_per_step": args.prompts,
        "step_wall_s": {arm: harness.spread([r["wall"] for r in v]) for arm, v in rows.items()},
        "step_cpu_s": {arm: harness.spread([r["cpu"] for r in v]) for arm, v in rows.items()},
        "fingerprint_s_per_step": harness.spread([r["fingerprint"] for r in on], 6),
        "fingerprint_share_of_step_cpu": harness.spread(share, 6),
    }


def page_text(result: dict[str, Any]) -> str:
    """What docs/long_videos.md shows between this script's markers."""
    rows = [
        [
            name.replace("_", ", "),
            f"{r['pixel_mb']:.0f} MB",
            f"{r['record']['median'] * 1e3:.1f} ms",
            f"{r['check']['median'] * 1e3:.2f} ms",
            f"{r['check_copy']['median'] * 1e3:.1f} ms",
        ]
        for name, r in result["prompts"].items()
    ]
    headers = ["prompt", "pixel tensor", "record (rollout)", "check", "check of a copy"]
    steps = result["steps"]
    wall, cpu = steps["step_wall_s"], steps["step_cpu_s"]
    lines = [
        harness.markdown_table(headers, rows),
        "",
        (
            f"- train step ({steps['model']} model, {steps['prompts_per_step']} prompts, "
            f"{wall['on']['n']} steps per arm): fingerprinting took "
            f"{steps['fingerprint_s_per_step']['median'] * 1e3:.1f} ms a step, "
            f"{steps['fingerprint_share_of_step_cpu']['median']:.2%} of the step's CPU time; "
            f"step wall time {wall['on']['median']:.2f} s on, {wall['off']['median']:.2f} s off "
            f"(CPU {cpu['on']['median']:.2f} s on, {cpu['off']['median']:.2f} s off: noise)"
        ),
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=4, help="measured steps per arm")
    parser.add_argument("--prompts", type=int, default=2, help="data.prompts_per_step")
    parser.add_argument("--repeats", type=int, default=5, help="timings per prompt size")
    parser.add_argument(
        "--table", action="store_true", help=f"write the results' table into {PAGE.name}"
    )
    args = harness.parse_args(parser, "input_check", argv)
    if args.table:
        harness.write_marked(PAGE, SCRIPT, page_text(json.loads(args.out.read_text())))
        print(f"wrote the table of {args.out} into {PAGE}")
        return
    if args.quick:
        args.steps, args.repeats = 1, 2
    run = harness.RunFacts()
    payload = {
        "benchmark": "input fingerprints: trainer.check_inputs (issue 46 item 5)",
        "command": "python bench/input_check.py" + (" --quick" if args.quick else ""),
        "quick": args.quick,
        "prompts": measure_prompts(args.repeats, {"16f_448x252": SIZES["16f_448x252"]})
        if args.quick
        else measure_prompts(args.repeats, SIZES),
        "steps": measure_steps(args),
        **run.facts(),
    }
    harness.write_results(args.out, payload)


if __name__ == "__main__":
    main()
