"""When two samples, or two media files, are the same (data preparation, issue 10).

- `normalize_text`: NFKC, casefold, punctuation -> space, whitespace collapsed.
- `normalize_path`: `\\` -> `/`, `.`/`..` collapsed, casefolded (no file-system access, so
  the result does not depend on which files exist).
- `sample_identity(record)` = sha256 of (family, sorted normalized media paths with their
  clip bounds, normalized problem text, normalized subtype). The answer is not part of it:
  the same question on the same video with another label is still the same prompt.
- `LeakIndex`: the identities and media files of benchmark samples; `matches(record)` says
  which benchmarks a training sample leaks into and by which rule, strongest first:
  `identity`, then a shared media file by `path`, `basename` or `stem` (basename without
  its extension), up to the configured `leak_match` level.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
import unicodedata

from videorl.data.records import TaskRecord
from videorl.video.media import MediaRef

LEAK_RULES = ("identity", "path", "basename", "stem")
LEAK_MATCH_LEVELS = LEAK_RULES[1:]  # `leak_match: stem` uses every rule up to `stem`

_PUNCTUATION = re.compile(r"[^\w\s]")


def normalize_text(text: str) -> str:
    """`"  What  color is the CAR?"` -> `"what color is the car"`."""
    text = _PUNCTUATION.sub(" ", unicodedata.normalize("NFKC", text).casefold())
    return " ".join(text.split())


def normalize_path(path: str) -> str:
    """`"Videos\\\\a/../A.MP4"` -> `"a.mp4"`: one spelling per file on any OS and case."""
    return posixpath.normpath(path.replace("\\", "/")).casefold()


def path_stem(normalized: str) -> str:
    """The file name without its last extension: `/v/abc.mp4` -> `abc`."""
    return posixpath.splitext(posixpath.basename(normalized))[0]


def media_paths(record: TaskRecord) -> tuple[str, ...]:
    """Normalized paths of the record's media files (video, image), without clip bounds."""
    return tuple(
        normalize_path(m.path)
        for m in (record.video, record.image)
        if m is not None and m.path is not None
    )


def _media_key(media: MediaRef) -> str:
    clip = "" if media.start is None and media.end is None else f"@{media.start}-{media.end}"
    return normalize_path(media.path or "") + clip


def sample_identity(record: TaskRecord) -> str:
    """Hex sha256 of (family, media paths + clips, problem text, subtype), all normalized."""
    media = sorted(
        _media_key(m) for m in (record.video, record.image) if m is not None and m.path is not None
    )
    subtype = None if record.subtype is None else normalize_text(record.subtype)
    payload = [record.family.value, media, normalize_text(record.problem), subtype]
    return hashlib.sha256(json.dumps(payload).encode("utf-8")).hexdigest()


class LeakIndex:
    """Identities and media files of benchmark samples, by rule, for leakage exclusion."""

    def __init__(self, leak_match: str = "stem") -> None:
        if leak_match not in LEAK_MATCH_LEVELS:
            raise ValueError(f"leak_match must be one of {LEAK_MATCH_LEVELS}, got {leak_match!r}")
        self.rules = LEAK_RULES[: LEAK_RULES.index(leak_match) + 1]
        self._keys: dict[str, dict[str, set[str]]] = {rule: {} for rule in self.rules}

    @staticmethod
    def _record_keys(record: TaskRecord, identity: str) -> dict[str, list[str]]:
        paths = media_paths(record)
        return {
            "identity": [identity],
            "path": list(paths),
            "basename": [posixpath.basename(p) for p in paths],
            "stem": [path_stem(p) for p in paths],
        }

    def add(self, benchmark: str, record: TaskRecord) -> None:
        keys = self._record_keys(record, sample_identity(record))
        for rule in self.rules:
            for key in keys[rule]:
                self._keys[rule].setdefault(key, set()).add(benchmark)

    def matches(self, record: TaskRecord, identity: str) -> dict[str, str]:
        """{benchmark: strongest rule} for every benchmark the record leaks into."""
        keys = self._record_keys(record, identity)
        found: dict[str, str] = {}
        for rule in self.rules:
            for key in keys[rule]:
                for benchmark in self._keys[rule].get(key, ()):
                    found.setdefault(benchmark, rule)
        return found
