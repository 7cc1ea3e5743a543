"""`python bench/long_video.py --steps`: the step time of a small run on 1-minute videos with
`data.prefetch_workers` 0 and 1 (issue 46), and whether the two runs' metrics agree.

Each prompt of the run has its own 1-minute 1280x720 30 fps file (a keyframe every 2 s; the
files repeat one encoded piece, as the decode bench's do), so every step decodes new videos
and prefetch has the next step's to decode while this one computes. Both runs train the
quickstart recipe (OraRL) on the bench model with the same seed and batches, one torch
thread in the trainer and in the prefetch worker; the first step (which nothing was decoded
ahead for) is left out of the medians. Metrics other than clocks and memory must be equal.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import harness

MINUTES = 1.0
FRAMES = 16  # video.max_frames: 16 frames over a minute, a seek each
# Small frames keep the bench model's step near the decode time, where prefetch can help.
OVERRIDES = [
    f"video.max_frames={FRAMES}",
    "video.min_frames=4",
    "video.max_pixels=50176",
    "data.prompts_per_step=2",
    "trainer.seed=0",
]


def write_records(folder: Path, videos: list[Path]) -> Path:
    """One temporal-grounding record per video (the question and window are arbitrary: the
    bench model is random)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "records.jsonl"
    with path.open("w") as out:
        for k, video in enumerate(videos):
            record = {
                "id": f"long-{k:03d}",
                "family": "temporal_grounding",
                "problem": "the texture pans right",
                "answer": {"windows": [[20.0, 30.0]]},
                "duration": MINUTES * 60,
                "video": {"path": str(video)},
            }
            out.write(json.dumps(record) + "\n")
    return path


def make_videos(work: Path, count: int, quick: bool) -> list[Path]:
    """`count` copies of one 1-minute file, each under its own name (so each decodes)."""
    from long_video import FPS, GOPS, encode_piece, tile, warm_page_cache

    width, height = (160, 96) if quick else (1280, 720)
    folder = work / "long_video_steps"
    piece = encode_piece(folder / f"piece-{width}x{height}-2s.mp4", width, height, GOPS["2s"])
    first = tile(piece, folder / f"{width}x{height}-1min.mp4", round(MINUTES * 60 * FPS))
    videos = []
    for k in range(count):
        copy = folder / f"{width}x{height}-1min-{k:03d}.mp4"
        if not copy.is_file():
            shutil.copyfile(first, copy)
        warm_page_cache(copy)
        videos.append(copy)
    return videos


def _run(work: Path, model: Path, train: Path, steps: int, workers: int) -> list[dict[str, Any]]:
    from videorl.trainer.loop import run_training
    from videorl.trainer.metrics import read_metrics

    out = work / f"long_video_steps_prefetch{workers}"
    shutil.rmtree(out, ignore_errors=True)
    cfg = harness.recipe(
        model,
        train,
        work,
        *OVERRIDES,
        f"trainer.steps={steps}",
        f"trainer.output_dir={out}",
        f"data.prefetch_workers={workers}",
    )
    run_training(cfg)
    return read_metrics(out / "metrics.jsonl")


def _measured(key: str) -> bool:
    """Clocks and memory, which no two runs share."""
    return key.startswith(("time/", "perf/")) or key.endswith("/seconds")


def measure_steps(work: Path, steps: int, quick: bool) -> dict[str, Any]:
    """Both runs; their step times (wall and CPU) and whether their metrics agree."""
    machine = harness.machine()  # the load as the runs start: on shared cores, it decides
    model = harness.model_dir(work, "tiny" if quick else "bench")
    prompts = int(OVERRIDES[3].split("=")[1])
    train = write_records(work / "long_video_steps", make_videos(work, steps * prompts, quick))
    runs = {workers: _run(work, model, train, steps, workers) for workers in (0, 1)}

    def kept(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{k: v for k, v in r.items() if not _measured(k)} for r in rows]

    out: dict[str, Any] = {
        "settings": OVERRIDES,
        "model": "tiny" if quick else "bench",
        "steps": steps,
        "videos": f"{steps * prompts} 1-minute 1280x720 files, a keyframe every 2 s",
        "same_metrics": kept(runs[0]) == kept(runs[1]),
        "machine": machine,
        "machine_at_end": harness.machine(),
    }
    for workers, rows in runs.items():
        later = rows[1:]  # step 1 had nothing decoded ahead
        out[f"prefetch{workers}"] = {
            "step_s": harness.spread([r["time/step"] for r in later], 3),
            "step_cpu_s": harness.spread([r["time/step_cpu"] for r in later], 3),
            "decode_s": harness.spread([r.get("time/decode", 0.0) for r in later], 3),
            "first_step_s": round(rows[0]["time/step"], 3),
        }
    zero, one = out["prefetch0"]["step_s"]["median"], out["prefetch1"]["step_s"]["median"]
    out["step_time_ratio_0_over_1"] = round(zero / one, 3) if one else None
    return out


def page_lines(step: dict[str, Any]) -> list[str]:
    """The lines docs/long_videos.md shows for the step-time part."""
    lines = []
    for workers in (0, 1):
        r = step[f"prefetch{workers}"]
        lines.append(
            f"- step time, `data.prefetch_workers={workers}`: {r['step_s']['median']:.2f} s "
            f"(median of steps 2-{step['steps']}; decode inside the step "
            f"{r['decode_s']['median']:.2f} s, trainer CPU {r['step_cpu_s']['median']:.2f} s)"
        )
    load = (step["machine"]["load_average_1min"], step["machine_at_end"]["load_average_1min"])
    lines.append(
        f"- prefetch 0 / 1 step time = {step['step_time_ratio_0_over_1']:.2f}x; "
        f"same metrics: {'yes' if step['same_metrics'] else 'NO'}; load average "
        f"{load[0]:g} -> {load[1]:g} on {step['machine']['cpu_count']} cores"
    )
    return lines
