"""Synthetic benchmarks and a fake answer producer for the evaluation tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from videorl.data.loaders import load_records
from videorl.data.synth import synthesize
from videorl.rewards.annotation import serialize_annotation
from videorl.video.decode import VideoConfig

# Small frames and few of them: decoding and the tiny model stay fast on a CPU.
SMALL_VIDEO = VideoConfig(
    fps=2.0, min_frames=2, max_frames=4, min_pixels=28 * 28, max_pixels=4 * 28 * 28
)


@pytest.fixture(scope="session")
def synth_tg(tmp_path_factory) -> Path:
    """Six synthetic temporal grounding records with their videos."""
    out = tmp_path_factory.mktemp("synth_tg")
    return synthesize(out, ["tg"], n=6, seed=0)


@pytest.fixture(scope="session")
def synth_all(tmp_path_factory) -> Path:
    """One synthetic record of every family (plus math) with media."""
    out = tmp_path_factory.mktemp("synth_all")
    return synthesize(out, ["all"], n=1, seed=1)


class AnnotationBackend:
    """Answers every record with its serialized ground truth; can fail after some calls."""

    label = "annotations"

    def __init__(self, fail_after: int | None = None) -> None:
        self.fail_after = fail_after
        self.calls: list[list[str]] = []

    def respond(self, items):
        if self.fail_after is not None and len(self.calls) >= self.fail_after:
            raise KeyboardInterrupt("simulated interruption")
        self.calls.append([record.id for record, _ in items])
        return [serialize_annotation(record) for record, _ in items]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def records_of(path: Path):
    return load_records(path).records


@pytest.fixture(scope="session")
def synth_seven(tmp_path_factory) -> tuple[list, list]:
    """(train, val) records of the seven video families: 48 and 24 per family."""
    from videorl.data.synth import write_dataset

    out = tmp_path_factory.mktemp("synth_seven") / "d"
    write_dataset(out, ["all"], n=48, val=24, seed=0)
    train = load_records(out / "train.jsonl").records
    val = load_records(out / "val.jsonl").records
    return (
        [r for r in train if r.family.value != "math"],
        [r for r in val if r.family.value != "math"],
    )
