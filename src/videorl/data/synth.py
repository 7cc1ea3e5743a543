"""`videorl synth`: real MP4/PNG files and exact-ground-truth records for every family.

`synthesize(out_dir, families, n, seed)` writes, under `out_dir`:
`videos/*.mp4` (PyAV, 8 fps, 2-16 s, 64-96 px), `images/*.png`, `records.jsonl` (all
families, family by family), `records_<short>.jsonl` per family, and with `val > 0` a
held-out `val.jsonl` (ids `<short>-val-NNNN`). Media paths in the records are relative to
`out_dir`; `load_records` resolves them against the file's folder.
`write_dataset` (the `videorl synth` command) adds `train.jsonl`, `val.jsonl` and a
`manifest.json` of every file it wrote, and writes the whole dataset or nothing: it is built
in a temporary folder beside `out_dir` and moved into place only when complete; a non-empty
`out_dir` is refused unless `overwrite`, which removes only what an earlier `synth` wrote.
Deterministic: record k of a family and split draws from
`np.random.default_rng([seed, family, split, k])`, so the same seed gives identical
records whatever other families are requested, and the validation set does not depend on
`n`.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from videorl.data.families import Family, PartTable, families, parse_family
from videorl.data.records import TaskRecord
from videorl.data.synth_tasks import TG_EVENTS, TG_GRIDS
from videorl.errors import ConfigError
from videorl.outputs import TMP_PREFIX, refuse_nonempty, swap_into_place

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SynthDraw:
    """One record to synthesize: `rng` draws it, `rid` names it, media go under `out`;
    `index` is its number in the split; `tg_events` the temporal-grounding event kinds,
    `tg_grid` the grid of its event bounds in seconds (`TG_GRIDS`)."""

    rng: np.random.Generator
    rid: str
    out: Path
    index: int
    tg_events: tuple[str, ...] = TG_EVENTS
    tg_grid: float = TG_GRIDS[0]


# family -> its generator (`tasks/<family>/synth.py`)
FAMILY_SYNTHS: PartTable[Callable[[SynthDraw], TaskRecord]] = PartTable("generator", "synth")


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
            chosen.update(families())
        else:
            chosen.add(parse_family(key))
    if not chosen:
        raise ConfigError("synth --families is empty; pass 'all' or names like 'tg,qa'")
    return tuple(f for f in families() if f in chosen)


SPLITS = ("train", "val")


def make_record(
    family: Family,
    index: int,
    seed: int,
    out: Path,
    split: str = "train",
    tg_events: tuple[str, ...] = TG_EVENTS,
    tg_grid: float = TG_GRIDS[0],
) -> TaskRecord:
    """Record `index` of `family` in `split`, writing its media under `out`; temporal
    grounding draws its event kind from `tg_events` and its bounds on `tg_grid`."""
    rng = np.random.default_rng([seed, families().index(family), SPLITS.index(split), index])
    rid = f"{family.short}-{'' if split == 'train' else split + '-'}{index:04d}"
    record = FAMILY_SYNTHS[family](SynthDraw(rng, rid, out, index, tg_events, tg_grid))
    return record


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
    tg_events: tuple[str, ...] = TG_EVENTS,
    tg_grid: float = TG_GRIDS[0],
) -> Path:
    """Write `n` training and `val` validation records per family (plus media) under
    `out_dir`; returns `out_dir/records.jsonl` (the training records)."""
    unknown = sorted(set(tg_events) - set(TG_EVENTS))
    if unknown or not tg_events:
        raise ConfigError(
            f"synth --tg-events {','.join(tg_events)}: {', '.join(unknown) or '(none)'} is not an event "
            f"kind; choose from {','.join(TG_EVENTS)}"
        )
    if tg_grid not in TG_GRIDS:
        raise ConfigError(
            f"synth --tg-grid {tg_grid:g}: the event bounds' grid is one of "
            f"{', '.join(f'{g:g}' for g in TG_GRIDS)} seconds"
        )
    if n < 1 or val < 0:
        raise ConfigError(
            f"synth --n={n} --val={val}: need at least 1 training record per family and val >= 0"
        )
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    chosen = parse_families(families)
    everything: list[TaskRecord] = []
    for family in chosen:
        records = [
            make_record(family, k, seed, out, tg_events=tg_events, tg_grid=tg_grid)
            for k in range(n)
        ]
        _write_jsonl(out / f"records_{family.short}.jsonl", records)
        everything.extend(records)
        logger.info("synth: %d %s records", n, family.value)
    path = out / "records.jsonl"
    _write_jsonl(path, everything)
    if val:
        held_out = [
            make_record(f, k, seed, out, "val", tg_events, tg_grid)
            for f in chosen
            for k in range(val)
        ]
        _write_jsonl(out / "val.jsonl", held_out)
    return path


MANIFEST = "manifest.json"


def _split(
    records_path: Path, n: int
) -> tuple[list[TaskRecord], list[TaskRecord], dict[str, list[TaskRecord]]]:
    """The first `n` records of each family train, the rest validate (disjoint videos)."""
    from videorl.data.loaders import load_records

    by_family: dict[str, list[TaskRecord]] = {}
    for record in load_records(records_path).records:
        by_family.setdefault(record.family.value, []).append(record)
    train = [r for rows in by_family.values() for r in rows[:n]]
    val = [r for rows in by_family.values() for r in rows[n:]]
    return train, val, by_family


def _fill_dataset(
    tmp: Path,
    families: list[str],
    n: int,
    val: int,
    seed: int,
    tg_events: tuple[str, ...],
    tg_grid: float,
) -> dict:
    from videorl.data.loaders import write_records

    records = synthesize(tmp, families, n=n + val, seed=seed, tg_events=tg_events, tg_grid=tg_grid)
    train, held_out, by_family = _split(records, n)
    for pooled in tmp.glob("records*.jsonl"):  # train and val together: training on it leaks
        pooled.unlink()
    write_records(tmp / "train.jsonl", train)
    if held_out:
        write_records(tmp / "val.jsonl", held_out)
    files = sorted(str(p.relative_to(tmp)) for p in tmp.rglob("*") if p.is_file())
    manifest = {
        "families": list(by_family),
        "n": n,
        "val": val,
        "seed": seed,
        **({} if tg_events == TG_EVENTS else {"tg_events": list(tg_events)}),
        **({} if tg_grid == TG_GRIDS[0] else {"tg_grid": tg_grid}),
        "records": {"train": len(train), "val": len(held_out)},
        "files": sorted([*files, MANIFEST]),
    }
    (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def _previous_files(out: Path) -> set[str]:
    """The files an earlier `synth` into `out` listed in its manifest."""
    try:
        return set(json.loads((out / MANIFEST).read_text(encoding="utf-8"))["files"])
    except (OSError, ValueError, KeyError, TypeError):
        return set()


def _move_in(tmp: Path, out: Path) -> None:
    """Replace `out` by `tmp`: in one rename when `out` holds only an earlier dataset, else
    file by file (files that no `synth` wrote are kept)."""
    previous = _previous_files(out)
    present = (
        {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()} if out.is_dir() else set()
    )
    if present <= previous:
        swap_into_place(tmp, out)
        return
    for name in previous & present:
        (out / name).unlink()
    for path in sorted(p for p in tmp.rglob("*") if p.is_file()):
        target = out / path.relative_to(tmp)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, target)
    shutil.rmtree(tmp)


def write_dataset(
    out_dir: str | os.PathLike,
    families: list[str],
    *,
    n: int,
    val: int,
    seed: int,
    overwrite: bool = False,
    tg_events: tuple[str, ...] = TG_EVENTS,
    tg_grid: float = TG_GRIDS[0],
) -> dict:
    """Write `n` training and `val` validation records per family, their media and a
    manifest under `out_dir`, all or nothing; returns the manifest."""
    if n < 1 or val < 0:
        raise ConfigError(f"synth --n={n} --val={val}: need --n >= 1 and --val >= 0")
    out = Path(out_dir)
    refuse_nonempty(out, overwrite=overwrite, option="synth --out")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f"{TMP_PREFIX}{out.name}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        manifest = _fill_dataset(tmp, families, n, val, seed, tg_events, tg_grid)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _move_in(tmp, out)
    return manifest
