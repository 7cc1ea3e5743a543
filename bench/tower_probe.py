"""Can the event be found in a vision tower's output, without training? A probe of the vision
stand-in (`make-tiny --vision-warmup`) on temporal-grounding data: the language model can
only learn to see what the tower's tokens show.

For each video (the recipes' 2 fps frames, 56-112 px), the tower's merged tokens of each
frame pair are one vector; a pair's score is its distance to the median pair. Reported:
`separation`, the mean score of the pairs inside the event over the mean score of the others
(1: the event does not stand out of the nuisance), and `mIoU` of bench/detector.py's rule
(the longest run above the largest gap) on the pair scores, at the pairs' 1 s resolution.

    PYTHONPATH=src python bench/tower_probe.py MODEL DATA/val.jsonl [DATA2/val.jsonl ...]
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import numpy as np
import torch
from detector import CONFIG, event_frames, iou

from videorl.data.loaders import load_records
from videorl.models.loading import load_model
from videorl.models.vision_warmup import WarmupSettings, encode_clip, tower_output
from videorl.video.decode import decode_video


def pair_scores(model, processor, path: str) -> tuple[np.ndarray, list[float]]:
    """Per frame pair: distance of its tokens to the median pair's; and each pair's start."""
    video = decode_video(path, CONFIG)
    frames = video.frames.permute(0, 2, 3, 1).numpy()
    frames = frames[: len(frames) // 2 * 2]
    settings = WarmupSettings(frames=(2, CONFIG.max_frames))
    encoded = encode_clip(processor, frames, settings)
    with torch.no_grad():
        tokens = tower_output(model.model.visual, encoded["pixels"], encoded["grid"])
    pairs = tokens.view(int(encoded["grid"][0, 0]), -1).numpy()
    scores = np.linalg.norm(pairs - np.median(pairs, 0), axis=1)
    return scores, list(video.meta.timestamps[::2][: len(scores)])


def probe(model_dir: Path, records_path: Path) -> dict[str, float]:
    loaded = load_model(model_dir)
    model, processor = loaded.model, loaded.processor
    model.eval()
    ratios, ious = [], []
    for record in load_records(records_path).records:
        t0, t1 = record.answer.windows[0]  # type: ignore[union-attr]
        assert record.video is not None and record.video.path is not None
        scores, starts = pair_scores(model, processor, record.video.path)
        inside = np.array([s < t1 and s + 1.0 > t0 for s in starts])
        ratios.append(float(scores[inside].mean() / max(scores[~inside].mean(), 1e-9)))
        first, last = event_frames(scores)
        ious.append(iou((starts[first], starts[last] + 1.0), (t0, t1)))
    return {"separation": statistics.median(ratios), "mIoU": 100 * statistics.fmean(ious)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("records", nargs="+", type=Path)
    args = parser.parse_args()
    torch.set_num_threads(1)
    for path in args.records:
        scores = probe(args.model, path)
        print(path, " ".join(f"{k} {v:.2f}" for k, v in scores.items()))


if __name__ == "__main__":
    main()
