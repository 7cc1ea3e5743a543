"""Benchmarks by name or by file.

`--benchmark` is either a data file in any format `load_records` reads (videorl records,
VTG, Time-R1, MCQ, math; every family) or the name of a standard temporal grounding
benchmark below. Nothing is downloaded: a named benchmark is looked up as a file under the
benchmark root (`--benchmark-root`, else `--video-root`, else `./benchmarks`), at one of
its expected relative paths. The annotation format is the VTG one, one JSON object per line:

    {"qid": 7, "query": "person opens the door", "duration": 30.9, "vid": "3MSZA",
     "relevant_windows": [[2.4, 8.1]], "video_file": "3MSZA.mp4",
     "video_start": 0.0, "video_end": 30.9}

`relevant_windows` may hold several windows (QVHighlights: the best match counts);
`video_start` / `video_end` (TVGBench clips) shift the windows into the clip's time axis;
without `video_file` the video is `<vid>.mp4`. Video paths are resolved against
`--video-root` (default: the annotation file's folder).

Names (aliases), expected files under the root, and query counts:
- `charades_sta` (charades): `charades_sta/test.jsonl` or `charades_sta_test.jsonl`; 3,720.
- `activitynet_captions` (activitynet, anet): `activitynet_captions/val_1.jsonl` or
  `activitynet_captions_val_1.jsonl`; ~17k.
- `qvhighlights` (qvh): `qvhighlights/highlight_val_release.jsonl` or
  `highlight_val_release.jsonl` (the official file is already in this format); 1,550.
- `tvgbench` (tvg): `tvgbench/tvgbench.jsonl` or `tvgbench.jsonl`; 800.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path

from videorl.data.families import Family
from videorl.errors import ConfigError, DataError

DEFAULT_ROOT = "benchmarks"
VTG_EXAMPLE = '{"qid", "query", "duration", "vid", "relevant_windows": [[s, e], ...], "video_file"}'


@dataclass(frozen=True)
class BenchmarkSpec:
    """A named benchmark: where its annotations are expected and how to read them."""

    name: str
    title: str
    files: tuple[str, ...]
    format: str = "vtg"
    family: Family = Family("temporal_grounding")  # noqa: RUF009 - a frozen value
    queries: str = ""
    aliases: tuple[str, ...] = ()


REGISTRY: dict[str, BenchmarkSpec] = {
    spec.name: spec
    for spec in (
        BenchmarkSpec(
            "charades_sta",
            "Charades-STA (test)",
            ("charades_sta/test.jsonl", "charades_sta_test.jsonl"),
            queries="3,720",
            aliases=("charades", "charades-sta"),
        ),
        BenchmarkSpec(
            "activitynet_captions",
            "ActivityNet Captions (val_1)",
            ("activitynet_captions/val_1.jsonl", "activitynet_captions_val_1.jsonl"),
            queries="~17k",
            aliases=("activitynet", "anet", "anet_captions"),
        ),
        BenchmarkSpec(
            "qvhighlights",
            "QVHighlights (val)",
            ("qvhighlights/highlight_val_release.jsonl", "highlight_val_release.jsonl"),
            queries="1,550",
            aliases=("qvh", "qv_highlights"),
        ),
        BenchmarkSpec(
            "tvgbench",
            "TVGBench",
            ("tvgbench/tvgbench.jsonl", "tvgbench.jsonl"),
            queries="800",
            aliases=("tvg", "tvg_bench"),
        ),
    )
}
_NAMES = {alias: spec for spec in REGISTRY.values() for alias in (spec.name, *spec.aliases)}


@dataclass(frozen=True)
class Benchmark:
    """A resolved benchmark: its display name, annotation file and how to read it."""

    name: str
    path: Path
    format: str = "auto"
    family: Family | None = None
    split: str = "train"  # of a folder or Hugging Face dataset


def _dataset_id(text: str) -> bool:
    """`org/name`, `org/name@split` or `hf://datasets/org/name`: no data-file suffix."""
    from videorl.data.sources import DATA_SUFFIXES, HF_PREFIX

    name = text.removeprefix(HF_PREFIX).split("@")[0]
    return name.count("/") == 1 and not name.lower().endswith(DATA_SUFFIXES)


def _key(name: str) -> str:
    return name.strip().lower().replace(" ", "_")


def resolve_benchmark(
    name_or_file: str,
    *,
    benchmark_root: str | Path | None = None,
    video_root: str | Path | None = None,
) -> Benchmark:
    """An existing file as is (format detected), else a registry name looked up under the
    benchmark root; errors name the expected paths and the fix."""
    path = Path(name_or_file).expanduser()
    if path.is_file():
        return Benchmark(name=path.stem, path=path)
    spec = _NAMES.get(_key(name_or_file))
    if spec is None and (path.is_dir() or _dataset_id(name_or_file)):
        # a folder of data files / a saved dataset, or a Hugging Face dataset id (split: test
        # unless `@split` is given)
        from videorl.data.sources import HF_PREFIX

        path = path if path.is_dir() else Path(name_or_file.removeprefix(HF_PREFIX))
        return Benchmark(name=path.name.split("@")[0], path=path, split="test")
    if spec is None:
        close = difflib.get_close_matches(_key(name_or_file), list(_NAMES), n=3, cutoff=0.5)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise ConfigError(
            f"--benchmark {name_or_file!r} is neither a file nor a known benchmark{hint}; pass a "
            f"data file (records, vtg, timer1, mcq or math format) or one of {', '.join(REGISTRY)}"
        )
    root = Path(benchmark_root or video_root or DEFAULT_ROOT).expanduser()
    candidates = [root / file for file in spec.files]
    for candidate in candidates:
        if candidate.is_file():
            return Benchmark(name=spec.name, path=candidate, format=spec.format, family=spec.family)
    raise DataError(
        f"benchmark {spec.name} ({spec.title}, {spec.queries} queries) needs its annotations at "
        f"{' or '.join(str(c) for c in candidates)}; convert the official annotations to JSONL "
        f"lines {VTG_EXAMPLE} and put them there, or pass --benchmark-root DIR or the file path"
    )
