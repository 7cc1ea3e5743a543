"""`videorl synth`: real MP4/PNG files and exact-ground-truth records for every family.

`synthesize(out_dir, families, n, seed)` writes, under `out_dir`:
`videos/*.mp4` (PyAV, 8 fps, 2-12 s, 64-96 px), `images/*.png`, `records.jsonl` (all
families, family by family), `records_<short>.jsonl` per family, and with `val > 0` a
held-out `val.jsonl` (ids `<short>-val-NNNN`). Media paths in the records are relative to
`out_dir`; `load_records` resolves them against the file's folder.
Deterministic: record k of a family and split draws from
`np.random.default_rng([seed, family, split, k])`, so the same seed gives identical
records whatever other families are requested, and the validation set does not depend on
`n`.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from videorl.data.families import Family, parse_family
from videorl.data.records import TaskRecord
from videorl.data.synth_reasoning import math_problem, spatial_intelligence, video_qa
from videorl.data.synth_tasks import (
    segmentation,
    spatial_grounding,
    spatio_temporal_grounding,
    temporal_grounding,
    tracking,
)
from videorl.errors import ConfigError

logger = logging.getLogger(__name__)

FAMILY_ORDER = tuple(Family)


def parse_families(names: str | Iterable[str | Family]) -> tuple[Family, ...]:
    """`"all"`, a comma-separated string or a list of names/aliases -> families in the
    canonical order, without duplicates."""
    if isinstance(names, (str, Family)):
        names = [names] if isinstance(names, Family) else names.split(",")
    chosen: set[Family] = set()
    for name in names:
        key = name.value if isinstance(name, Family) else str(name).strip()
        if not key:
            continue
        if key.lower() == "all":
            chosen.update(Family)
        else:
            chosen.add(parse_family(key))
    if not chosen:
        raise ConfigError("synth --families is empty; pass 'all' or names like 'tg,qa'")
    return tuple(f for f in FAMILY_ORDER if f in chosen)


SPLITS = ("train", "val")


def make_record(
    family: Family, index: int, seed: int, out: Path, split: str = "train"
) -> TaskRecord:
    """Record `index` of `family` in `split`, writing its media under `out`."""
    rng = np.random.default_rng([seed, FAMILY_ORDER.index(family), SPLITS.index(split), index])
    rid = f"{family.short}-{'' if split == 'train' else split + '-'}{index:04d}"
    if family is Family.TEMPORAL_GROUNDING:
        return temporal_grounding(rng, rid, out)
    if family is Family.SPATIAL_GROUNDING:
        return spatial_grounding(rng, rid, out)
    if family is Family.SEGMENTATION:
        return segmentation(rng, rid, out, video=index % 2 == 1)
    if family is Family.TRACKING:
        return tracking(rng, rid, out)
    if family is Family.SPATIO_TEMPORAL_GROUNDING:
        return spatio_temporal_grounding(rng, rid, out)
    if family is Family.VIDEO_QA:
        return video_qa(rng, rid, out)
    if family is Family.SPATIAL_INTELLIGENCE:
        return spatial_intelligence(rng, rid, out, index)
    return math_problem(rng, rid)


def _write_jsonl(path: Path, records: list[TaskRecord]) -> None:
    tmp = path.with_suffix(".jsonl.tmp")
    with tmp.open("w", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record.to_dict(), sort_keys=True) + "\n")
    os.replace(tmp, path)


def synthesize(
    out_dir: str | os.PathLike,
    families: str | Iterable[str | Family] = ("all",),
    n: int = 16,
    seed: int = 0,
    val: int = 0,
) -> Path:
    """Write `n` training and `val` validation records per family (plus media) under
    `out_dir`; returns `out_dir/records.jsonl` (the training records)."""
    if n < 1 or val < 0:
        raise ConfigError(
            f"synth --n={n} --val={val}: need at least 1 training record per family and val >= 0"
        )
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    chosen = parse_families(families)
    everything: list[TaskRecord] = []
    for family in chosen:
        records = [make_record(family, k, seed, out) for k in range(n)]
        _write_jsonl(out / f"records_{family.short}.jsonl", records)
        everything.extend(records)
        logger.info("synth: %d %s records", n, family.value)
    path = out / "records.jsonl"
    _write_jsonl(path, everything)
    if val:
        held_out = [make_record(f, k, seed, out, "val") for f in chosen for k in range(val)]
        _write_jsonl(out / "val.jsonl", held_out)
    return path
