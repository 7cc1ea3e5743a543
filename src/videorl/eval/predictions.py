"""`predictions.jsonl`: one line per answered record, appended as answers arrive.

A line is `{"id": ..., "response": "<raw model text>"}`, or `{"id": ..., "response": null,
"error": "..."}` when the record's media could not be decoded; an answer made with tools
(`videorl eval --tools`) also has `"tools": {"calls", "errors", "turns"}`, and an answer
whose input is known has `"input_fingerprint"`, the digest of what the model was given
(docs/long_videos.md#input-fingerprints). Files written by other tools
are read too: the id may be under `id`, `qid`, `question_id` or `uid`, the text under
`response`, `prediction`, `pred`, `answer`, `output` or `text`. The last line of an id
wins. Resuming skips ids that have a response; error lines are tried again. An unreadable
final line (a write cut by an interruption) is ignored with a warning, and removed when
the file is appended to again.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TextIO

from videorl.errors import DataError

logger = logging.getLogger(__name__)

ID_KEYS = ("id", "qid", "question_id", "uid")
RESPONSE_KEYS = ("response", "prediction", "pred", "answer", "output", "text")


@dataclass(frozen=True)
class Prediction:
    """A record's raw answer text (None when it has none) and why not."""

    id: str
    response: str | None
    error: str | None = None
    # The coordinate frame the answer is in when the model's differs from the record's
    # (`data.coordinates`): {"box_format": "abs"|"norm1000", "width": W, "height": H}.
    frame: dict[str, Any] | None = None
    # What a tool-using answer did: {"calls": n, "errors": n, "turns": n} (`--tools`).
    tools: dict[str, int] | None = None
    # The digest of the input the model was given (`models/fingerprint.py`), when known.
    input_fingerprint: str | None = None


def _first(row: dict[str, Any], keys: tuple[str, ...]) -> Any:
    return next((row[k] for k in keys if k in row), None)


def _prediction(row: Any, where: str) -> Prediction:
    if not isinstance(row, dict):
        raise DataError(f"{where}: expected a JSON object, got {type(row).__name__}")
    rid = _first(row, ID_KEYS)
    if rid is None:
        raise DataError(f"{where}: no id field (one of {', '.join(ID_KEYS)}); add the record id")
    response = _first(row, RESPONSE_KEYS)
    if isinstance(response, list):  # several samples: the first is the greedy/primary one
        response = response[0] if response else None
    if response is not None and not isinstance(response, str):
        response = json.dumps(response)
    frame = row.get("frame") if isinstance(row.get("frame"), dict) else None
    tools = row.get("tools") if isinstance(row.get("tools"), dict) else None
    seen = row.get("input_fingerprint")
    return Prediction(
        str(rid), response, row.get("error"), frame, tools, seen if isinstance(seen, str) else None
    )


def read_predictions(path: str | os.PathLike) -> dict[str, Prediction]:
    """Predictions by id (last line wins); a missing file is empty."""
    path = Path(path)
    if not path.is_file():
        return {}
    lines = path.read_text(encoding="utf-8").splitlines()
    out: dict[str, Prediction] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            if number == len(lines):
                logger.warning(
                    "%s:%d: ignoring an incomplete last line (%s)", path, number, err.msg
                )
                continue
            raise DataError(
                f"{path}:{number}: invalid JSON ({err.msg}); fix or delete the line"
            ) from None
        prediction = _prediction(row, f"{path}:{number}")
        out[prediction.id] = prediction
    return out


def finished_ids(path: str | os.PathLike) -> set[str]:
    """Ids that already have a response (skipped when a run resumes)."""
    return {rid for rid, p in read_predictions(path).items() if p.response is not None}


class PredictionWriter:
    """Appends prediction lines, flushed one by one so an interruption loses at most the
    line being written."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.is_file():
            data = self.path.read_bytes()
            if data and not data.endswith(b"\n"):  # a line cut by an interruption: drop it
                os.truncate(self.path, data.rfind(b"\n") + 1)
        self._file: TextIO = self.path.open("a", encoding="utf-8")

    def write(self, prediction: Prediction) -> None:
        row: dict[str, Any] = {"id": prediction.id, "response": prediction.response}
        if prediction.error is not None:
            row["error"] = prediction.error
        if prediction.frame is not None:
            row["frame"] = prediction.frame
        if prediction.tools is not None:
            row["tools"] = prediction.tools
        if prediction.input_fingerprint is not None:
            row["input_fingerprint"] = prediction.input_fingerprint
        self._file.write(json.dumps(row, ensure_ascii=False) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
