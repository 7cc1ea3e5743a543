"""Generic temporal-grounding records on the vision warm-up's clips: a try at a stand-in for
the video-text pretraining a real VLM's language model has had (docs/lab/models-that-see.md,
section 14).

Each record is one clip of `data/synth_clips.py` (`--kind shape`: one shape on an empty,
still screen; `broad`: textured, moving scenes with several shapes) at 2 fps, 16-32 frames,
and one question about one of its content changes (`synth_clips.changes`): a shape on
screen over part of the clip, a shape shown in another colour, the scene brighter or darker.
Nothing of bench/heldout.py's scenes is drawn, and no question is a held-out one.

    PYTHONPATH=src python bench/pretrain_grounding.py --out runs/pretrain --kind shape \
        --n 1024 --val 32
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from videorl.data.families import Family
from videorl.data.loaders import write_records
from videorl.data.records import MediaRef, TaskRecord, TemporalAnswer
from videorl.data.synth_clips import SCENE_KINDS
from videorl.video.encode import write_mp4

FPS = 2  # the clip's frames are the 2 fps samples the recipes read
FRAMES = (16, 32)  # 8-16 s, as the quickstart's and the held-out scenes' videos


def record(rng: np.random.Generator, out: Path, rid: str, kind: str) -> TaskRecord:
    """One clip with a change (clips without one are drawn again) and a question on it."""
    while True:
        frames, _, found = SCENE_KINDS[kind](rng, FRAMES)
        if found:
            break
    change = found[int(rng.integers(len(found)))]
    relative = f"videos/{rid}.mp4"
    write_mp4(out / relative, frames, FPS)
    return TaskRecord(
        id=rid,
        family=Family("temporal_grounding"),
        problem=change.question,
        answer=TemporalAnswer(((change.first / FPS, change.last / FPS),)),
        video=MediaRef(path=relative),
        duration=len(frames) / FPS,
        source=f"pretrain-{kind}",
        width=int(frames.shape[2]),
        height=int(frames.shape[1]),
    )


def write_pretrain(out: Path, kind: str, n: int, val: int, seed: int) -> None:
    """`out/train.jsonl` and `out/val.jsonl` (each split on its own random stream); refuses
    to write over a data set already in `out`."""
    for split in ("train", "val"):
        if (out / f"{split}.jsonl").exists():
            raise SystemExit(f"{out / split}.jsonl exists: pass another --out, or remove it")
    for split, count in (("train", n), ("val", val)):
        rng = np.random.default_rng([seed, ("train", "val").index(split)])
        records = [record(rng, out, f"pre-{split}-{k:05d}", kind) for k in range(count)]
        write_records(out / f"{split}.jsonl", records)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--kind", choices=sorted(SCENE_KINDS), default="shape")
    parser.add_argument("--n", type=int, default=1024)
    parser.add_argument("--val", type=int, default=32)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    write_pretrain(args.out, args.kind, args.n, args.val, args.seed)


if __name__ == "__main__":
    main()
