"""`videorl score`: score a dump of response texts against their records (issue 4.8).

Records: JSONL of the generic record dict (`record_from_dict`). Responses: JSONL of
`{"id": <record id>, "response": <text>}` (`text` is accepted for `response`). Output: one
JSON object per response with the row's components.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from videorl.data.records import TaskRecord, record_from_dict
from videorl.errors import DataError
from videorl.reduction import logged
from videorl.rewards.batch import score_batch
from videorl.rewards.config import RewardConfig


def _json_lines(path: Path) -> Iterator[tuple[int, Any]]:
    if not path.is_file():
        raise DataError(f"{path}: no such file")
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                yield number, json.loads(line)
            except ValueError as exc:
                raise DataError(f"{path}:{number}: invalid JSON ({exc})") from None


def read_records(path: str | Path) -> dict[str, TaskRecord]:
    """Records by id; a malformed record or a repeated id names the file and line."""
    path = Path(path)
    records: dict[str, TaskRecord] = {}
    lines: dict[str, int] = {}
    for number, data in _json_lines(path):
        try:
            record = record_from_dict(data)
        except DataError as exc:
            raise DataError(f"{path}:{number}: {exc}") from None
        if record.id in records:
            raise DataError(
                f"{path}:{number}: record id {record.id!r} already on line {lines[record.id]}"
            )
        records[record.id], lines[record.id] = record, number
    return records


def read_responses(path: str | Path, records: dict[str, TaskRecord]) -> list[tuple[str, str]]:
    """(record id, response text) pairs in file order."""
    path = Path(path)
    rows = []
    for number, data in _json_lines(path):
        if not isinstance(data, dict) or "id" not in data:
            raise DataError(f"{path}:{number}: expected an object with 'id' and 'response'")
        text = data.get("response", data.get("text"))
        if not isinstance(text, str):
            raise DataError(
                f"{path}:{number}: 'response' (or 'text') must be a string, got {text!r}"
            )
        record_id = str(data["id"])
        if record_id not in records:
            raise DataError(f"{path}:{number}: record id {record_id!r} is not in the records file")
        rows.append((record_id, text))
    return rows


def score_file(
    records_path: str | Path,
    responses_path: str | Path,
    out_path: str | Path | None,
    config: RewardConfig,
) -> dict[str, Any]:
    """Score every response; write `{"id", "family", "overall", "components", "error"}` per
    line to `out_path` (when given) and return a summary: counts, mean overall per family,
    failures by reason."""
    records = read_records(records_path)
    rows = read_responses(responses_path, records)
    batch = score_batch([records[i] for i, _ in rows], [text for _, text in rows], config)
    if out_path is not None:
        out = Path(out_path)
        out.parent.mkdir(parents=True, exist_ok=True)
        with out.open("w", encoding="utf-8") as handle:
            for (record_id, _), result in zip(rows, batch.results, strict=True):
                line = {
                    "id": record_id,
                    "family": records[record_id].family.value,
                    "overall": result.overall,
                    "components": result.components,
                    "error": result.error,
                }
                handle.write(json.dumps(line) + "\n")
    by_family: dict[str, list[float]] = defaultdict(list)
    for (record_id, _), result in zip(rows, batch.results, strict=True):
        by_family[records[record_id].family.value].append(result.overall)
    return {
        "scored": len(rows),
        "mean": batch.metrics["reward/mean"],
        "families": {
            f: {"count": len(v), "mean": sum(v) / len(v)} for f, v in sorted(by_family.items())
        },
        "failed": {
            k.removeprefix("reward/failed_"): int(v)
            for k, v in logged(batch.metrics).items()
            if k.startswith("reward/failed_")
        },
        "out": None if out_path is None else str(out_path),
    }
