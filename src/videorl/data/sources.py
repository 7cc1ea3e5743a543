"""Where rows come from: a data file, a folder of them, or a Hugging Face dataset.

`open_source(spec)` yields `(location, row)` pairs and the folder media paths are relative to:

- a `.jsonl` / `.ndjson` / `.json` (list) / `.parquet` file;
- a folder: a `datasets.save_to_disk` folder, or every data file under it; when file names
  carry split names (`train.jsonl`, `data/test-00000-of-00001.parquet`, `val.jsonl`), only
  the requested split's files;
- a Hugging Face dataset id, `org/name`, `hf://datasets/org/name` or `org/name@split`
  (EasyR1's form), read with `datasets.load_dataset` (HF_HOME cache, HF_HUB_OFFLINE,
  HF_TOKEN; `streaming=True` reads rows without preparing the whole set on disk).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from videorl.config.loader import not_utf8
from videorl.errors import DataError, fix
from videorl.hub import looks_local
from videorl.quickstart import next_command

DATA_SUFFIXES = (".jsonl", ".ndjson", ".json", ".parquet")
HF_PREFIX = "hf://datasets/"
SPLIT_NAMES = {
    "train": ("train", "training"),
    "validation": ("validation", "valid", "val", "dev"),
    "test": ("test", "testing"),
}
_WORDS = re.compile(r"[a-z]+")


@dataclass
class Source:
    """Rows of one data source and where relative media paths start."""

    label: str
    root: Path
    rows: Iterator[tuple[str, Any]]


def file_rows(path: Path) -> Iterator[tuple[str, Any]]:
    """(location, row) pairs; location is `line N` (JSONL) / `item N` (JSON) / `row N`
    (Parquet), 1-based. An unparseable JSON line is yielded as a DataError."""
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            table = pq.read_table(path)
        except (pa.ArrowException, OSError) as err:
            first = str(err).splitlines()[0] if str(err) else type(err).__name__
            raise DataError(f"{path}: not a readable Parquet file ({first})") from None
        for number, row in enumerate(table.to_pylist(), start=1):
            yield f"row {number}", row
    elif suffix == ".json":
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as err:
            raise DataError(f"{path}:{err.lineno}: invalid JSON ({err.msg})") from None
        except UnicodeDecodeError:
            raise DataError(str(not_utf8(str(path), path.read_bytes()))) from None
        if not isinstance(data, list):
            raise DataError(f"{path}: expected a JSON list of objects (or use .jsonl)")
        for number, row in enumerate(data, start=1):
            yield f"item {number}", row
    else:
        yield from _jsonl_rows(path)


def _jsonl_rows(path: Path) -> Iterator[tuple[str, Any]]:
    with path.open("rb") as lines:
        for number, raw in enumerate(lines, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                byte = raw[err.start]
                message = f"not UTF-8 text (byte 0x{byte:02x} at column {err.start + 1})"
                yield f"line {number}", DataError(f"{message}; save the file as UTF-8")
                continue
            if not line.strip():
                continue
            try:
                yield f"line {number}", json.loads(line)
            except json.JSONDecodeError as err:
                yield f"line {number}", DataError(f"invalid JSON ({err.msg})")


def _split_of(relative: Path) -> str | None:
    words = set(_WORDS.findall(str(relative).lower()))
    return next((split for split, names in SPLIT_NAMES.items() if words & set(names)), None)


def folder_files(folder: Path, split: str) -> list[Path]:
    """The data files under `folder`, only `split`'s when the names carry splits."""
    found = sorted(
        p
        for p in folder.rglob("*")
        if p.is_file() and p.suffix.lower() in DATA_SUFFIXES and not p.name.startswith(".")
    )
    if not found:
        raise DataError(
            f"folder {folder} has no data files ({', '.join(DATA_SUFFIXES)}); check the path"
        )
    splits = {p: _split_of(p.relative_to(folder)) for p in found}
    if not any(splits.values()):
        return found
    wanted = [p for p in found if splits[p] == split]
    if not wanted:
        named = sorted({s for s in splits.values() if s})
        raise DataError(
            f"folder {folder} has no files of split {split!r} (found {', '.join(named)}); "
            f"{fix('set data.split / data.val_split')} or give a file"
        )
    return wanted


def _is_saved_dataset(folder: Path) -> bool:
    return (folder / "dataset_dict.json").is_file() or (
        (folder / "state.json").is_file() and (folder / "dataset_info.json").is_file()
    )


def _undecoded(dataset: Any) -> Any:
    """Image/Video columns as `{path, bytes}` dicts: media are read by videorl's decoder."""
    from datasets import Image, Video

    features = dataset.features
    if features is None:  # a streaming set whose features are unknown until read
        return dataset
    for name, feature in features.items():
        inner = getattr(feature, "feature", None)
        for kind in (Image, Video):
            if isinstance(feature, kind):
                dataset = dataset.cast_column(name, kind(decode=False))
            elif isinstance(inner, kind):
                dataset = dataset.cast_column(name, type(feature)(kind(decode=False)))
    return dataset


def _dataset_rows(dataset: Any) -> Iterator[tuple[str, Any]]:
    for number, row in enumerate(_undecoded(dataset), start=1):
        yield f"row {number}", dict(row)


def split_dataset_id(spec: str, split: str) -> tuple[str, str]:
    """`hf://datasets/org/name@split` -> (`org/name`, `split`)."""
    name = spec.removeprefix(HF_PREFIX)
    if "@" in name:
        name, _, split = name.rpartition("@")
    return name, split


def _hub_dataset(spec: str, split: str, streaming: bool) -> Source:
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    name, split = split_dataset_id(spec, split)
    try:
        validate_repo_id(name)
    except HFValidationError:
        raise DataError(
            f"data file not found: {spec}; {fix('check data.train / data.val')} (a JSONL/Parquet "
            "file, a folder of them, or a Hugging Face dataset id org/name)"
        ) from None
    import datasets

    try:
        dataset = datasets.load_dataset(name, split=split, streaming=streaming)
    except (FileNotFoundError, ConnectionError, ValueError) as err:
        reason = str(err).splitlines()[0][:200] if str(err) else type(err).__name__
        raise DataError(
            f"data {spec!r} is not a local file or folder and the Hugging Face dataset "
            f"{name!r} (split {split!r}) could not be loaded ({reason}); pre-download it with "
            f"`hf download {name} --repo-type dataset` or give a local path"
        ) from None
    return Source(f"{name}@{split}", Path.cwd(), _dataset_rows(dataset))


def open_source(
    spec: str | os.PathLike[str], *, split: str = "train", streaming: bool = False
) -> list[Source]:
    """The sources behind one `data.train` / `data.val` value (one per file of a folder)."""
    path = Path(spec)
    if path.is_file():
        if path.suffix.lower() not in DATA_SUFFIXES:
            raise DataError(
                f"{path}: unsupported data file type; use one of {', '.join(DATA_SUFFIXES)}"
            )
        return [Source(str(path), path.parent, file_rows(path))]
    if path.is_dir():
        if _is_saved_dataset(path):
            import datasets

            dataset = datasets.load_from_disk(str(path))
            if isinstance(dataset, datasets.DatasetDict):
                if split not in dataset:
                    raise DataError(
                        f"{path} has no split {split!r} (has {', '.join(dataset)}); "
                        f"{fix('set data.split / data.val_split')}"
                    )
                dataset = dataset[split]
            return [Source(str(path), path, _dataset_rows(dataset))]
        return [Source(str(f), f.parent, file_rows(f)) for f in folder_files(path, split)]
    hub_id = str(spec).startswith(HF_PREFIX) or not looks_local(spec)
    if Path(spec).suffix.lower() in DATA_SUFFIXES or not hub_id:
        hint = next_command(spec) or f"; {fix('check data.train / data.val')} and the path"
        raise DataError(f"data file not found: {spec}{hint}")
    return [_hub_dataset(str(spec), split, streaming)]
