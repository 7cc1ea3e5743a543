"""Bundled examples: a few synthetic videos with exact ground truth, made at demo start.

Nothing binary is committed: `make_examples(folder)` runs the synthetic generator with a
fixed seed, so every start shows the same examples. Spatial grounding is synthesized as a
still image; the demo takes videos, so that image becomes a short still clip.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from videorl.data.families import Family, families
from videorl.data.records import TaskRecord
from videorl.demo.parts import FAMILY_DEMOS
from videorl.video.media import MediaRef

EXAMPLE_SEED = 0
EXAMPLES_PER_FAMILY = 2
STILL_CLIP_SECONDS = 2
STILL_CLIP_FPS = 8


def demo_families() -> tuple[Family, ...]:
    """The families the demo asks (those whose module declares `demo` parts), in order."""
    return tuple(f for f in families() if FAMILY_DEMOS.get(f) is not None)


def family_label(family: Family) -> str:
    demo = FAMILY_DEMOS.get(family)
    assert demo is not None, family
    return demo.label


@dataclass(frozen=True)
class Example:
    """A synthetic record whose media is a video file (absolute path)."""

    label: str
    record: TaskRecord

    @property
    def video_path(self) -> str:
        assert self.record.video is not None and self.record.video.path is not None
        return self.record.video.path


def still_clip(record: TaskRecord, out: Path) -> TaskRecord:
    """The record with its image replaced by a still MP4 of the same frame."""
    from PIL import Image

    from videorl.video.encode import write_mp4

    assert record.image is not None and record.image.path is not None
    with Image.open(record.image.path) as image:
        frame = np.asarray(image.convert("RGB"))
    frames = np.repeat(frame[None], STILL_CLIP_SECONDS * STILL_CLIP_FPS, axis=0)
    path = write_mp4(out / "videos" / f"{record.id}.mp4", frames, STILL_CLIP_FPS)
    return dataclasses.replace(
        record, image=None, video=MediaRef(path=str(path)), duration=float(STILL_CLIP_SECONDS)
    )


def make_examples(folder: str | Path, per_family: int = EXAMPLES_PER_FAMILY) -> list[Example]:
    """Synthesize `per_family` examples of every demo family under `folder`."""
    from videorl.data.loaders import load_records
    from videorl.data.synth import synthesize

    out = Path(folder).resolve()
    records = load_records(
        synthesize(out, [f.value for f in demo_families()], n=per_family, seed=EXAMPLE_SEED)
    ).records
    examples = []
    for record in records:
        if record.video is None:
            record = still_clip(record, out)
        label = f"{family_label(record.family)}: {record.problem} ({record.id})"
        examples.append(Example(label=label, record=record))
    return examples
