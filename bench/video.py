"""Decode once: decodes per distinct video per step and decode time, against a naive pipeline
that decodes at every pass; and the decoding throughput of each installed backend (issue 11).

Part 1 runs real `train_step`s (tiny model: decode counts and decode times do not depend on
the model) of two recipes whose passes see the video several times: OraRL (quickstart) with
two mini-batches (rollout, old log-probs, update) and TaRO (rollout, constructed-prefix
continuations, two sensitivity passes, old log-probs, update). videorl's decodes are
`VideoCache.decode_count`; its decode time is the time inside `VideoCache.get`. The naive
pipeline's decodes are counted on the same steps: every pass (a generation call, a log-prob
pass, the update) that builds model inputs holding a video counts one decode of that video,
as a pipeline without a shared cache would do; then those decodes are really run
(`decode_video`, same sampling) and timed. Part 2 decodes the same files with every backend
of `videorl.video.backends` (the not-installed ones are listed as such).

    python bench/video.py [--steps 3] [--prompts 4] [--repeats 3] [--quick]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, get_args

import harness
import numpy as np

RECIPES = {
    "orarl": ("OraRL quickstart, 2 mini-batches", []),
    "taro": (
        "TaRO: constructed prefixes + sensitivity, 2 mini-batches",
        [
            "algorithm.estimator=grpo",
            "algorithm.annotation_rows=false",
            "algorithm.pruning.enabled=false",
            "algorithm.constructed.enabled=true",
            "algorithm.constructed.curriculum.schedule=linear",
            "algorithm.constructed.curriculum.warmup_steps=100",
            "reward.sensitivity.enabled=true",
        ],
    ),
}


class PassLedger:
    """Which videos each pass of a step fed to the model (one pass = one generation call,
    one log-prob pass or one update; the old log-probs inside the update are a pass of
    their own)."""

    def __init__(self) -> None:
        self.paths: dict[int, str] = {}  # id(pixel tensor) -> video path
        self.keep: list[Any] = []  # keeps the tensors alive so their ids stay unique
        self.passes: list[set[str]] = []
        self.open: list[int] = []

    def encoded(self, prompt: Any, path: str) -> None:
        pixels = prompt.vision.get("pixel_values_videos")
        if pixels is not None:
            self.paths[id(pixels)] = path
            self.keep.append(pixels)

    def wrap_pass(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            self.passes.append(set())
            self.open.append(len(self.passes) - 1)
            try:
                return fn(*args, **kwargs)
            finally:
                self.open.pop()

        return run

    def wrap_inputs(self, fn: Callable[..., Any], prompts_at: int = 0) -> Callable[..., Any]:
        """Record the videos of the prompts (positional argument `prompts_at`) fed to `fn`."""

        def build(*args: Any, **kwargs: Any) -> Any:
            if self.open:
                for prompt in args[prompts_at]:
                    path = self.paths.get(id(prompt.vision.get("pixel_values_videos")))
                    if path is not None:
                        self.passes[self.open[-1]].add(path)
            return fn(*args, **kwargs)

        return build


@contextmanager
def patched(targets: list[tuple[Any, str, Callable[[Any], Any]]]) -> Iterator[None]:
    """setattr(obj, name, make(original)) for each target; undone on exit."""
    originals = [(obj, name, getattr(obj, name)) for obj, name, _ in targets]
    for obj, name, make in targets:
        setattr(obj, name, make(getattr(obj, name)))
    try:
        yield
    finally:
        for obj, name, original in originals:
            setattr(obj, name, original)


def one_step(state: Any, indices: list[int]) -> dict[str, Any]:
    """One `train_step` with videorl's decodes and decode time, and the passes that fed each video."""
    import videorl.models.generate as generate_module
    import videorl.models.logprobs as logprobs_module
    import videorl.rollout.engine as engine_module
    from videorl.rollout import prompting
    from videorl.trainer import stages, update
    from videorl.trainer.step import STAGES, train_step
    from videorl.video.decode import decode_video

    ledger, decode_s = PassLedger(), [0.0]
    real_get, real_encode = state.videos.get, prompting.encode_record

    def timed_get(media: Any) -> Any:
        start = time.perf_counter()
        try:
            return real_get(media)
        finally:
            decode_s[0] += time.perf_counter() - start

    def encode(policy: Any, record: Any, media: Any, *args: Any, **kwargs: Any) -> Any:
        prompt = real_encode(policy, record, media, *args, **kwargs)
        ledger.encoded(prompt, str(record.media.path))
        return prompt

    targets = [
        (prompting, "encode_record", lambda _: encode),  # decode_prompts' encodings
        (engine_module, "generate", ledger.wrap_pass),
        (stages, "logprobs_in_microbatches", ledger.wrap_pass),
        (update, "logprobs_in_microbatches", ledger.wrap_pass),
        (generate_module, "collate", ledger.wrap_inputs),
        (logprobs_module, "rows_logprobs", lambda fn: ledger.wrap_inputs(fn, prompts_at=1)),
        (update, "rows_logprobs", lambda fn: ledger.wrap_inputs(fn, prompts_at=1)),
    ]
    distinct = {str(state.records[i].media.path) for i in indices}
    decodes_before = state.videos.decode_count
    state.videos.get = timed_get
    try:
        table = replace(STAGES, update=ledger.wrap_pass(STAGES.update))
        with patched(targets):
            train_step(state, indices, table)
    finally:
        del state.videos.get
    state.step += 1
    naive = [path for used in ledger.passes for path in sorted(used)]
    start = time.perf_counter()
    for path in naive:
        decode_video(path, state.cfg.video)
    return {
        "distinct_videos": len(distinct),
        "passes": len(ledger.passes),
        "passes_with_video": sum(1 for used in ledger.passes if used),
        "videorl_decodes": state.videos.decode_count - decodes_before,
        "videorl_decode_s": decode_s[0],
        "naive_decodes": len(naive),
        "naive_decode_s": time.perf_counter() - start,
    }


def decode_once(args: argparse.Namespace, recipe: str, train: Path, model: Path) -> dict[str, Any]:
    from videorl.trainer.build import build_state
    from videorl.video.decode import decode_video

    label, extra = RECIPES[recipe]
    overrides = [
        f"data.prompts_per_step={args.prompts}",
        f"rollout.max_new_tokens={args.response_tokens}",
        "optim.mini_batches=2",
        f"trainer.seed={args.seed}",
        *extra,
    ]
    state = build_state(harness.recipe(model, train, args.work / recipe, *overrides), None)
    media = state.records[-1].media
    assert media is not None and media.path is not None
    decode_video(media.path, state.cfg.video)  # warm-up: codec and resize set-up
    batches = harness.endless(state.sampler)
    steps = []
    for _ in range(args.steps):
        steps.append(one_step(state, next(batches)))
        s = steps[-1]
        print(
            f"  {recipe}: {s['distinct_videos']} videos, videorl {s['videorl_decodes']} decodes "
            f"{s['videorl_decode_s']:.3f} s, naive {s['naive_decodes']} decodes {s['naive_decode_s']:.3f} s",
            flush=True,
        )

    def per_video(key: str) -> list[float]:
        return [s[key] / s["distinct_videos"] for s in steps]

    return {
        "recipe": label,
        "overrides": overrides,
        "steps": steps,
        "videorl_decodes_per_video": harness.spread(per_video("videorl_decodes")),
        "naive_decodes_per_video": harness.spread(per_video("naive_decodes")),
        "videorl_decode_s_per_step": harness.spread([s["videorl_decode_s"] for s in steps]),
        "naive_decode_s_per_step": harness.spread([s["naive_decode_s"] for s in steps]),
        "decode_time_ratio": harness.spread(
            [s["naive_decode_s"] / max(s["videorl_decode_s"], 1e-9) for s in steps]
        ),
    }


def large_clip(work: Path, quick: bool) -> Path:
    """A 640x360 (quick: 160x96), 25 fps, 20 s (quick: 2 s) clip of moving shapes, built once."""
    from videorl.video.encode import write_mp4

    width, height, seconds = (160, 96, 2) if quick else (640, 360, 20)
    path = work / "video" / f"clip-{width}x{height}-{seconds}s.mp4"
    if path.is_file():
        return path
    fps = 25
    y, x = np.mgrid[0:height, 0:width]
    frames = np.empty((fps * seconds, height, width, 3), dtype=np.uint8)
    for k in range(len(frames)):
        frames[k, ..., 0] = (x + 4 * k) % 256
        frames[k, ..., 1] = (y + 2 * k) % 256
        frames[k, ..., 2] = ((x // 40 + y // 40 + k // 5) % 2) * 255
    write_mp4(path, frames, fps)
    return path


def backend_throughput(files: dict[str, list[Path]], repeats: int) -> dict[str, Any]:
    """Each installed backend decodes the same files (`decode_video`, quickstart sampling)."""
    from videorl.config import load_config
    from videorl.video.backends import Backend, backend_available
    from videorl.video.decode import decode_video

    sampling = load_config(harness.RECIPE, ["model.path=x", "data.train=x"]).video
    out: dict[str, Any] = {}
    for backend in get_args(Backend):  # the order `Backend` declares
        if not backend_available(backend):
            out[backend] = {"installed": False}
            print(f"  {backend}: not installed", flush=True)
            continue
        config = replace(sampling, backend=backend)
        out[backend] = {"installed": True}
        for name, paths in files.items():
            decode_video(paths[0], config)  # warm-up: library load
            seconds, frames = [], 0
            for _ in range(repeats):
                start = time.perf_counter()
                frames = sum(int(decode_video(p, config).frames.shape[0]) for p in paths)
                seconds.append(time.perf_counter() - start)
            out[backend][name] = {
                "files": len(paths),
                "sampled_frames": frames,
                "videos_per_s": harness.spread([len(paths) / s for s in seconds], 2),
                "frames_per_s": harness.spread([frames / s for s in seconds], 1),
                "ms_per_video": harness.spread([1000 * s / len(paths) for s in seconds], 2),
            }
            print(
                f"  {backend} {name}: {out[backend][name]['ms_per_video']['median']:.1f} ms/video",
                flush=True,
            )
    return {
        "sampling": {
            k: getattr(sampling, k)
            for k in ("fps", "min_frames", "max_frames", "min_pixels", "max_pixels")
        },
        "backends": out,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--prompts", type=int, default=4, help="data.prompts_per_step")
    parser.add_argument("--response-tokens", type=int, default=16, help="rollout.max_new_tokens")
    parser.add_argument("--repeats", type=int, default=3, help="backend throughput repeats")
    args = harness.parse_args(parser, "video", argv)
    if args.quick:
        args.steps, args.prompts, args.response_tokens, args.repeats = 1, 2, 4, 1
    run = harness.RunFacts()
    train = harness.synth_data(args.work, "temporal_grounding", n=16, seed=args.seed)
    model = harness.model_dir(args.work, "tiny")
    once = {name: decode_once(args, name, train, model) for name in RECIPES}
    synth_files = sorted((train.parent / "videos").glob("*.mp4"))
    files = {
        "synth_tg_64-96px_8fps": synth_files,
        "clip_large": [large_clip(args.work, args.quick)],
    }
    throughput = backend_throughput(files, args.repeats)
    result = {
        "benchmark": "video",
        "command": "python bench/video.py" + (" --quick" if args.quick else ""),
        "quick": args.quick,
        "decode_once": once,
        "throughput": throughput,
        "files": {
            name: [str(p.relative_to(args.work)) for p in paths] for name, paths in files.items()
        },
        **run.facts(),
    }
    rows = [
        [
            r["recipe"],
            harness.fmt(r["videorl_decodes_per_video"]),
            harness.fmt(r["naive_decodes_per_video"]),
            harness.fmt(r["videorl_decode_s_per_step"], " s", 3),
            harness.fmt(r["naive_decode_s_per_step"], " s", 3),
            harness.fmt(r["decode_time_ratio"], "x", 1),
        ]
        for r in once.values()
    ]
    print()
    print(
        harness.markdown_table(
            [
                "recipe",
                "decodes per video per step: videorl",
                "naive (per pass)",
                "decode time per step: videorl",
                "naive",
                "naive / videorl",
            ],
            rows,
        )
    )
    rows = []
    for backend, res in throughput["backends"].items():
        if not res["installed"]:
            rows.append([backend, "not installed", "-", "-"])
            continue
        for name in files:
            rows.append(
                [
                    backend,
                    name,
                    harness.fmt(res[name]["ms_per_video"], " ms", 1),
                    harness.fmt(res[name]["frames_per_s"], "", 0),
                ]
            )
    print()
    print(
        harness.markdown_table(
            ["backend", "files", "per video, median (range)", "sampled frames/s"], rows
        )
    )
    harness.write_results(args.out, result)


if __name__ == "__main__":
    main()
