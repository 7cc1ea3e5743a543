"""A training-free event detector for temporal grounding: is the event findable at all in the
frames a model sees? (issue 45: a held-out generator is fair only if it is.)

From the 2 fps frames the recipes sample (`video.fps=2`, up to 32 frames), each frame is
reduced to a 4 x 4 grid of mean colours (textures, noise and small shapes average out), and
scored by its distance to the video's median grid; the event frames are the longest run of
frames above a threshold halfway up the largest gap in the sorted scores. The window is
`[first frame's time, last frame's time + 1 / fps)`. No learning, no labels, no question:
it finds "the frames that differ from most of the video", which every held-out event is.

    PYTHONPATH=src python bench/detector.py runs/heldout/drift/val.jsonl
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import numpy as np
import torch

from videorl.data.loaders import load_records
from videorl.data.records import TaskRecord
from videorl.video.decode import VideoConfig, decode_video

GRID = 4
CONFIG = VideoConfig(fps=2.0, min_frames=4, max_frames=32, min_pixels=3136, max_pixels=12544)


def frame_scores(frames: torch.Tensor) -> np.ndarray:
    """Per frame: L2 distance of its `GRID x GRID` mean-colour grid (0-1 pixel values) to the
    per-cell median over the video's frames."""
    pooled = torch.nn.functional.adaptive_avg_pool2d(frames.float() / 255, GRID)
    cells = pooled.flatten(1).numpy()
    return np.linalg.norm(cells - np.median(cells, 0), axis=1)


def event_frames(scores: np.ndarray) -> tuple[int, int]:
    """(first, last) index of the longest run of frames above the largest-gap threshold."""
    ordered = np.sort(scores)
    gap = int(np.argmax(np.diff(ordered)))
    above = scores > (ordered[gap] + ordered[gap + 1]) / 2
    runs: list[tuple[int, int]] = []
    for k, on in enumerate(above):
        if on and runs and runs[-1][1] == k - 1:
            runs[-1] = (runs[-1][0], k)
        elif on:
            runs.append((k, k))
    return max(runs, key=lambda run: run[1] - run[0])  # the top score is always above


def detect(record: TaskRecord) -> tuple[float, float]:
    """The detected event window of `record`'s video, in seconds."""
    assert record.video is not None and record.video.path is not None
    video = decode_video(record.video.path, CONFIG)
    first, last = event_frames(frame_scores(video.frames))
    times = video.meta.timestamps
    step = 1 / video.meta.fps
    return float(times[first]), float(times[last] + step)


def iou(a: tuple[float, float], b: tuple[float, float]) -> float:
    inter = max(0.0, min(a[1], b[1]) - max(a[0], b[0]))
    union = max(a[1], b[1]) - min(a[0], b[0])
    return inter / union if union > 0 else 0.0


def detector_miou(path: str | Path) -> dict[str, float]:
    """mIoU (0-100) of `detect` over the records of `path`, overall and per event kind."""
    records = load_records(path).records
    by_kind: dict[str, list[float]] = {}
    for record in records:
        truth = record.answer.windows[0]  # type: ignore[union-attr]
        by_kind.setdefault(record.subtype or "-", []).append(iou(detect(record), truth))
    scores = {"mIoU": 100 * statistics.fmean(v for vs in by_kind.values() for v in vs)}
    scores.update({kind: 100 * statistics.fmean(vs) for kind, vs in sorted(by_kind.items())})
    return scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("records", nargs="+", type=Path)
    args = parser.parse_args()
    torch.set_num_threads(1)
    for path in args.records:
        scores = detector_miou(path)
        print(path, " ".join(f"{k} {v:.1f}" for k, v in scores.items()))


if __name__ == "__main__":
    main()
