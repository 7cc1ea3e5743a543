"""Read task records from JSONL, JSON or Parquet files, folders of them or Hugging Face
datasets, in any supported format.

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
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from videorl.data.columns import COLUMN_FORMATS, ColumnsConfig, column_converter
from videorl.data.families import Family
from videorl.data.formats import CONVERTERS, FORMATS, detect_format, resolve_family
from videorl.data.published_prompts import load_format_prompt
from videorl.data.records import TaskRecord
from videorl.data.sources import DATA_SUFFIXES, open_source
from videorl.errors import ConfigError, DataError, MediaError, VideoRLError, fix
from videorl.video.media import MediaRef

logger = logging.getLogger(__name__)

MAX_KEPT_ERRORS = 100  # messages kept for the report; every skipped row is still counted
ALL_FORMATS = FORMATS + COLUMN_FORMATS
__all__ = ["DATA_SUFFIXES", "LoadResult", "load_records", "write_records"]


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


def _resolve(media: MediaRef | None, root: Path) -> MediaRef | None:
    if media is None or media.path is None:
        return media
    path = Path(os.path.expanduser(media.path))
    return dataclasses.replace(media, path=str(path if path.is_absolute() else root / path))


@dataclass
class _Reading:
    """What a load has gathered so far: the format (detected from the first row unless
    given), the rows read, the valid records, and the skipped rows with their first messages."""

    chosen: str | None
    skip_invalid: bool
    skip_fix: str = "set data.skip_invalid=true"
    columns: ColumnsConfig | None = None
    format_prompt: str = "auto"
    rows: int = 0
    records: list[TaskRecord] = field(default_factory=list)
    skipped: int = 0
    errors: list[str] = field(default_factory=list)
    _converter: Callable[..., TaskRecord] | None = None

    def converter(self) -> Callable[..., TaskRecord]:
        """The row converter of the chosen format (built once)."""
        if self._converter is None:
            assert self.chosen is not None
            self._converter = (
                column_converter(self.chosen, self.columns, self.format_prompt)
                if self.chosen in COLUMN_FORMATS
                else CONVERTERS[self.chosen]
            )
        return self._converter

    def skip(self, message: str) -> None:
        """Count an invalid row, or raise its error unless `skip_invalid` is set."""
        if not self.skip_invalid:
            raise DataError(f"{message}; fix the row or {self.skip_fix}") from None
        self.skipped += 1
        if len(self.errors) < MAX_KEPT_ERRORS:
            self.errors.append(message)


def load_records(
    path: str | os.PathLike,
    *,
    format: str = "auto",
    family: str | Family | None = None,
    video_root: str | os.PathLike | None = None,
    skip_invalid: bool = False,
    columns: ColumnsConfig | None = None,
    split: str = "train",
    streaming: bool = False,
    max_rows: int | None = None,
    format_prompt: str = "auto",
    skip_fix: str = "set data.skip_invalid=true",
) -> LoadResult:
    """Read and validate every row of `path`: a data file (`.jsonl`, `.ndjson`, `.json` list,
    `.parquet`), a folder of them, or a Hugging Face dataset (see `data/sources.py`).

    `format="auto"` detects it from the first row's fields. `family` sets the family of
    formats that do not name one (e.g. `mcq` rows of spatial intelligence). `columns`
    names the columns of the verl/EasyR1/OraRL layouts (`data/columns.py`); `max_rows`
    stops after that many rows (all sources together). `format_prompt` is the format prompt
    EasyR1 rows are rendered in (`data.format_prompt`: auto, math, r1v, none or a jinja file).
    `skip_fix` is how the caller's user skips invalid rows, as an invalid row's error says it
    (`pass --skip-invalid` for eval).
    """
    if format != "auto" and format not in ALL_FORMATS:
        raise ConfigError(
            f"data format {format!r} is unknown; use auto or one of {', '.join(ALL_FORMATS)}"
        )
    sources = open_source(path, split=split, streaming=streaming)
    fixed_family = resolve_family(family)
    chosen = None if format == "auto" else format
    if chosen is None and columns is not None and columns.any_set():
        chosen = "columns"
    load_format_prompt(format_prompt)  # a missing template file is a config error, not a row's
    reading = _Reading(chosen, skip_invalid, skip_fix, columns, format_prompt)
    for source in sources:
        root = (Path(video_root) if video_root is not None else source.root).resolve()
        _read_source(source, root, reading, fixed_family, max_rows)
    if reading.skipped:
        logger.warning(
            "%s: skipped %d invalid rows (first: %s)", path, reading.skipped, reading.errors[0]
        )
    return LoadResult(
        str(path), reading.chosen or "empty", reading.records, reading.skipped, reading.errors
    )


def _read_source(
    source: Any,
    root: Path,
    reading: _Reading,
    family: Family | None,
    max_rows: int | None,
) -> None:
    """Convert the rows of one source into `reading` (media paths resolved against `root`)
    until `max_rows` rows are read in all."""
    stem = Path(source.label).stem if Path(source.label).suffix else Path(source.label).name
    for location, row in source.rows:
        if max_rows is not None and reading.rows >= max_rows:
            break
        reading.rows += 1
        line = location.split()[-1]
        try:
            if reading.chosen is None and isinstance(row, dict):
                reading.chosen = _detect(row)
            record = _convert(row, reading, f"{stem}-{line}", family)
            record = dataclasses.replace(
                record, video=_resolve(record.video, root), image=_resolve(record.image, root)
            )
        except VideoRLError as err:  # DataError, or ConfigError for an unknown family name
            reading.skip(f"{source.label}:{line} ({location}): {err}")
            continue
        reading.records.append(record)


def _convert(row: Any, reading: _Reading, default_id: str, family: Family | None) -> TaskRecord:
    if isinstance(row, DataError):
        raise row
    if not isinstance(row, dict) or reading.chosen is None:
        raise DataError(f"expected a JSON object, got {type(row).__name__}")
    return reading.converter()(row, default_id, family)


def _detect(row: dict[str, Any]) -> str:
    chosen = detect_format(row)
    if chosen is None:
        raise DataError(
            f"cannot tell the data format from the fields {sorted(row)}; "
            f"{fix('set data.format to one of')} {', '.join(ALL_FORMATS)}"
            f"{fix(' (or data.columns.prompt=COLUMN ...)')}"
        )
    return chosen


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
        f"{len(missing)} of {total} media files are missing or empty (first: {first}); "
        f"{fix('set data.video_root')} to the folder that holds them, fix the paths, or drop "
        "those records"
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


def load_training_records(
    path: str | os.PathLike,
    *,
    families: Iterable[str],
    warn: Callable[[str], None],
    **load_kwargs: Any,
) -> list[TaskRecord]:
    """The records of `path` (`load_records` with `load_kwargs`) in `families` (names or
    short names; empty: all). No record left, or no media file found, is an error; some
    missing media files are a warning (`warn`): those samples are skipped and counted."""
    wanted = set(families)
    records, dropped = [], Counter[str]()
    for record in load_records(path, **load_kwargs).records:
        if not wanted or {record.family.value, record.family.short} & wanted:
            records.append(record)
        else:
            dropped[record.family.value] += 1
    if not records:
        raise ConfigError(
            f"data file {str(path)!r} has no records of data.families={sorted(wanted)}"
        )
    if dropped:
        total = len(records) + dropped.total()
        warn(
            f"data.families={sorted(wanted)} keeps {len(records)} of the {total} records "
            f"of {path} (left out: {', '.join(f'{k} {v}' for k, v in sorted(dropped.items()))}); "
            "set data.families=all to use every family"
        )
    missing = check_media(records)
    if missing:
        total = len({r.media.path for r in records if r.media is not None and r.media.path})
        if len(missing) == total:
            raise MediaError(media_report(missing, total))
        warn(f"{media_report(missing, total)}; those samples are skipped and counted")
    return records
