"""Read task records from JSONL, JSON or Parquet files in any supported format.

`load_records(path, format=...)` returns a `LoadResult`: the valid records, how many rows
were skipped and why. A malformed row raises `DataError("FILE:LINE: field ...")`, or, with
`skip_invalid=True` (`data.skip_invalid`), is skipped and counted. Relative media paths
are resolved against `video_root` (default: the data file's folder). `check_media` and
`require_media` report missing media before training starts.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from videorl.config_loader import not_utf8
from videorl.data.families import Family
from videorl.data.formats import CONVERTERS, FORMATS, detect_format, resolve_family
from videorl.data.records import MediaRef, TaskRecord
from videorl.errors import ConfigError, DataError, MediaError, VideoRLError

logger = logging.getLogger(__name__)

MAX_KEPT_ERRORS = 100  # messages kept for the report; every skipped row is still counted
DATA_SUFFIXES = (".jsonl", ".ndjson", ".json", ".parquet")


@dataclass(frozen=True)
class LoadResult:
    """Records read from one file; `skipped` rows failed validation (first messages in
    `errors`) and were dropped because `skip_invalid` was set."""

    path: str
    format: str
    records: list[TaskRecord]
    skipped: int = 0
    errors: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.records)

    def __iter__(self) -> Iterator[TaskRecord]:
        return iter(self.records)


def _rows(path: Path) -> Iterator[tuple[str, Any]]:
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
        with path.open("rb") as lines:
            for number, raw in enumerate(lines, start=1):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as err:
                    yield (
                        f"line {number}",
                        DataError(
                            f"not UTF-8 text (byte 0x{raw[err.start]:02x} at column "
                            f"{err.start + 1}); save the file as UTF-8"
                        ),
                    )
                    continue
                if not line.strip():
                    continue
                try:
                    yield f"line {number}", json.loads(line)
                except json.JSONDecodeError as err:
                    yield f"line {number}", DataError(f"invalid JSON ({err.msg})")


def _resolve(media: MediaRef | None, root: Path) -> MediaRef | None:
    if media is None or media.path is None:
        return media
    path = Path(os.path.expanduser(media.path))
    return dataclasses.replace(media, path=str(path if path.is_absolute() else root / path))


def load_records(
    path: str | os.PathLike,
    *,
    format: str = "auto",
    family: str | Family | None = None,
    video_root: str | os.PathLike | None = None,
    skip_invalid: bool = False,
) -> LoadResult:
    """Read and validate every row of `path` (`.jsonl`, `.ndjson`, `.json` list, `.parquet`).

    `format="auto"` detects it from the first row's fields. `family` sets the family of
    formats that do not name one (e.g. `mcq` rows of spatial intelligence).
    """
    path = Path(path)
    if format != "auto" and format not in FORMATS:
        raise ConfigError(
            f"data format {format!r} is unknown; use auto or one of {', '.join(FORMATS)}"
        )
    if not path.is_file():
        raise DataError(f"data file not found: {path}; check data.train / data.val or the path")
    if path.suffix.lower() not in DATA_SUFFIXES:
        raise DataError(
            f"{path}: unsupported data file type; use one of {', '.join(DATA_SUFFIXES)}"
        )
    fixed_family = resolve_family(family)
    root = (Path(video_root) if video_root is not None else path.parent).resolve()
    records: list[TaskRecord] = []
    errors: list[str] = []
    skipped = 0
    chosen = None if format == "auto" else format
    for location, row in _rows(path):
        try:
            if isinstance(row, DataError):
                raise row
            if not isinstance(row, dict):
                raise DataError(f"expected a JSON object, got {type(row).__name__}")
            if chosen is None:
                chosen = detect_format(row)
                if chosen is None:
                    raise DataError(
                        f"cannot tell the data format from the fields {sorted(row)}; pass "
                        f"format= one of {', '.join(FORMATS)}"
                    )
            default_id = f"{path.stem}-{location.split()[-1]}"
            record = CONVERTERS[chosen](row, default_id, fixed_family)
            record = dataclasses.replace(
                record, video=_resolve(record.video, root), image=_resolve(record.image, root)
            )
        except VideoRLError as err:  # DataError, or ConfigError for an unknown family name
            message = f"{path}:{location.split()[-1]} ({location}): {err}"
            if not skip_invalid:
                raise DataError(f"{message}; fix the row or set data.skip_invalid=true") from None
            skipped += 1
            if len(errors) < MAX_KEPT_ERRORS:
                errors.append(message)
            continue
        records.append(record)
    if skipped:
        logger.warning("%s: skipped %d invalid rows (first: %s)", path, skipped, errors[0])
    return LoadResult(str(path), chosen or "empty", records, skipped, errors)


# ----- media checks ------------------------------------------------------------------------


def check_media(records: Iterable[TaskRecord]) -> list[str]:
    """Paths of media files that are missing or empty (0 bytes), each once, in record order."""
    problems: dict[str, None] = {}
    for record in records:
        media = record.media
        if media is None or media.path is None or media.path in problems:
            continue
        try:
            if os.path.getsize(media.path) == 0:
                problems[media.path] = None
        except OSError:
            problems[media.path] = None
    return list(problems)


def media_report(missing: list[str], total: int, show: int = 5) -> str:
    """`"3 of 120 media files are missing or empty (first: a, b, c); ..."`."""
    if not missing:
        return f"all {total} media files are present"
    first = ", ".join(missing[:show])
    return (
        f"{len(missing)} of {total} media files are missing or empty (first: {first}); set "
        "data.video_root to the folder that holds them, fix the paths, or drop those records"
    )


def require_media(records: list[TaskRecord]) -> None:
    """Raise a `MediaError` with `media_report` if any record's media is missing."""
    missing = check_media(records)
    if missing:
        total = len({r.media.path for r in records if r.media is not None and r.media.path})
        raise MediaError(media_report(missing, total))


def _portable(record: TaskRecord, folder: Path) -> TaskRecord:
    """Absolute media paths inside `folder` are written relative to it (the loader resolves
    them back), so a data folder can be moved; relative paths already mean "relative to the
    data file" and are kept."""
    changes = {}
    for name in ("video", "image"):
        media = getattr(record, name)
        if media is not None and media.path is not None and Path(media.path).is_absolute():
            target = Path(media.path).resolve()
            inside = target.is_relative_to(folder)
            changes[name] = dataclasses.replace(
                media, path=str(target.relative_to(folder) if inside else target)
            )
    return dataclasses.replace(record, **changes) if changes else record


def write_records(path: str | os.PathLike, records: Iterable[TaskRecord]) -> Path:
    """Write records in the generic format (`.jsonl` or `.parquet`, by suffix); media paths
    are relative to the file's folder when they lie inside it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [_portable(record, path.parent.resolve()).to_dict() for record in records]
    if path.suffix.lower() == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        # Answers and extras differ in shape per family; JSON text keeps one column type.
        # Every row gets every column (from_pylist takes the columns of the first row).
        columns = list(dict.fromkeys(k for row in rows for k in row))
        table = pa.Table.from_pylist(
            [
                {
                    k: json.dumps(v) if isinstance(v, (dict, list)) else v
                    for k, v in ((k, row.get(k)) for k in columns)
                }
                for row in rows
            ]
        )
        pq.write_table(table, path)
        return path
    with path.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, sort_keys=True) + "\n")
    return path
