"""`videorl prepare`: several annotation sources -> one training set a paper can describe.

Steps, in order (counts of each land in `manifest.json`):
1. load each source (`load_records`), keep the listed `subtypes` if any;
2. drop every sample that leaks into a benchmark (`identity.LeakIndex`: same identity, or a
   shared media file by path, basename or stem);
3. drop duplicates (same `sample_identity`), keeping the first in sources-file order;
4. hold out the canary: whole media files, chosen by a seeded shuffle, skipping a file
   whose loss would leave a source below its quota; the rest of a canary file's prompts
   leave training, so canary media and training media are disjoint;
5. fill quotas tightest first (ascending available / quota; `quota: null` = take all, last)
   by a seeded shuffle per source, at most `max_prompts_per_media` prompts per media file;
   a source that stays short fails the run, naming the source and how much it lacks.
Outputs `train.jsonl` and `canary.jsonl` (sorted keys, sources-file order) and
`manifest.json`; the same inputs and seed give byte-identical files. Output ids are
`<source name>/<original id>` so they stay unique across sources.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import random
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, cast, overload

import videorl
from videorl.config.constraints import Between, Checked, Constraint, Ge
from videorl.config.loader import build, yaml_error
from videorl.data.families import parse_family
from videorl.data.identity import LeakIndex, media_paths, sample_identity
from videorl.data.loaders import ALL_FORMATS, load_records, write_records
from videorl.data.records import TaskRecord
from videorl.errors import ConfigError, DataError
from videorl.outputs import TMP_PREFIX, refuse_nonempty, refuse_own_inputs

if TYPE_CHECKING:
    from videorl.video.media import MediaRef

_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
OUTPUTS = ("train.jsonl", "canary.jsonl", "manifest.json")  # renamed into place in this order
# Per-source counts, in the order each step removes samples (manifest `sources.<name>`).
_COUNTS = (
    "loaded",
    "skipped_invalid",
    "subtype_filtered",
    "leaked",
    "duplicates",
    "duplicates_within",
    "duplicates_across",
    "eligible",
    "canary",
    "canary_media",
    "media_capped",
    "selected",
)


# ----- the sources file -------------------------------------------------------------------


def _check_common(name: str, path: str, format: str, family: str | None) -> None:
    if not name:
        raise ConfigError("key 'name' is missing; give it a unique name such as 'charades'")
    if not _NAME.match(name):
        raise ConfigError(f"name={name!r} may only use letters, digits, '_', '-' and '.'")
    if not path:
        raise ConfigError("key 'path' is missing; set it to the annotation file")
    if format not in ("auto", *ALL_FORMATS):
        raise ConfigError(
            f"format={format!r} is unknown; use auto or one of {', '.join(ALL_FORMATS)}"
        )
    if family is not None:
        parse_family(family)


class _Spec(Checked):
    """A sources-file section; a refused value's line ends with the key's alternative
    (`quota=0 must be >= 1, or null to take all`)."""

    ALTERNATIVES: ClassVar[dict[str, str]] = {}

    @classmethod
    def refusal(cls, key: str, value: Any, constraint: Constraint) -> str:
        return super().refusal(key, value, constraint) + cls.ALTERNATIVES.get(key, "")


@dataclass(frozen=True)
class SourceSpec(_Spec):
    """One training source. Relative `path`/`media_root` are relative to the sources file;
    `media_root` defaults to the annotation file's folder; `quota: null` takes all."""

    name: str = ""
    path: str = ""
    format: str = "auto"
    family: str | None = None
    quota: Annotated[int | None, Ge(1)] = None
    media_root: str | None = None
    subtypes: tuple[str, ...] = ()
    skip_invalid: bool = False

    ALTERNATIVES: ClassVar[dict[str, str]] = {"quota": ", or null to take all"}

    def __post_init__(self) -> None:
        _check_common(self.name, self.path, self.format, self.family)
        super().__post_init__()


@dataclass(frozen=True)
class BenchmarkSpec:
    """An evaluation set whose samples and media must not appear in training."""

    name: str = ""
    path: str = ""
    format: str = "auto"
    family: str | None = None
    media_root: str | None = None

    def __post_init__(self) -> None:
        _check_common(self.name, self.path, self.format, self.family)


@dataclass(frozen=True)
class CanarySpec(_Spec):
    """The held-out canary size: a `fraction` of the eligible samples (those left after
    leakage and duplicate removal) or a `count`; neither means no canary."""

    fraction: Annotated[float | None, Between(0, 1, low_open=True, high_open=True)] = None
    count: Annotated[int | None, Ge(1)] = None

    ALTERNATIVES: ClassVar[dict[str, str]] = {"count": "; drop 'canary' for none"}

    def __post_init__(self) -> None:
        if self.fraction is not None and self.count is not None:
            raise ConfigError("set only one of 'fraction' (e.g. 0.05) or 'count' (e.g. 100)")
        super().__post_init__()


@dataclass(frozen=True)
class PrepareSpec(_Spec):
    """The whole sources file."""

    sources: tuple[SourceSpec, ...] = ()
    benchmarks: tuple[BenchmarkSpec, ...] = ()
    seed: Annotated[int, Ge(0)] = 0
    max_prompts_per_media: Annotated[int | None, Ge(1)] = None
    canary: CanarySpec = CanarySpec()
    leak_match: Literal["path", "basename", "stem"] = "stem"

    ALTERNATIVES: ClassVar[dict[str, str]] = {"max_prompts_per_media": ", or null for no cap"}

    def __post_init__(self) -> None:
        if not self.sources:
            raise ConfigError("key 'sources' is missing or empty; list at least one source")
        super().__post_init__()
        for key, items in (("sources", self.sources), ("benchmarks", self.benchmarks)):
            names = [item.name for item in items]
            repeated = sorted({n for n in names if names.count(n) > 1})
            if repeated:
                raise ConfigError(
                    f"{key}: name {repeated[0]!r} is used twice; give each a unique name"
                )


def load_spec(path: str | os.PathLike) -> PrepareSpec:
    """Read and validate a sources YAML; every error is one line naming the key and the fix."""
    import yaml

    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"sources file not found: {path}; pass --sources SOURCES.yaml")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise yaml_error(path, err, "sources file") from None
    if not isinstance(data, dict):
        raise ConfigError(
            f"{path}: expected a mapping with a 'sources' list, got {type(data).__name__}"
        )
    try:
        return build(PrepareSpec, data)
    except ConfigError as err:
        raise ConfigError(f"{path}: {err}") from None


# ----- selection ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Candidate:
    """A loaded sample: its source (index into `spec.sources`), identity and media group
    (its media file, or its own identity when it has none; the per-media cap counts groups)."""

    record: TaskRecord
    source: int
    position: int  # order of loading (sources-file order, then file order)
    identity: str
    group: str
    has_media: bool


@dataclass(frozen=True)
class Mixture:
    """The selected training and canary samples and every count the manifest reports."""

    train: list[Candidate]
    canary: list[Candidate]
    sources: dict[str, dict[str, Any]]
    benchmarks: dict[str, dict[str, Any]]
    selection_order: list[str]


@overload
def _absolute(base: Path, path: str) -> Path: ...
@overload
def _absolute(base: Path, path: str | None) -> Path | None: ...
def _absolute(base: Path, path: str | None) -> Path | None:
    return None if path is None else Path(os.path.abspath(base / os.path.expanduser(path)))


def _load(
    spec: SourceSpec | BenchmarkSpec, base: Path, skip_invalid: bool = False
) -> tuple[list[TaskRecord], int]:
    path = _absolute(base, spec.path)
    root = _absolute(base, spec.media_root) or path.parent
    result = load_records(
        path, format=spec.format, family=spec.family, video_root=root, skip_invalid=skip_invalid
    )
    return result.records, result.skipped


def _candidate(record: TaskRecord, source: int, position: int) -> Candidate:
    identity = sample_identity(record)
    paths = media_paths(record)
    group = paths[0] if paths else f"id:{identity}"
    return Candidate(record, source, position, identity, group, bool(paths))


def _available(pool: list[Candidate], cap: int | None) -> Counter:
    """Per source: the samples it could get if it had every media file to itself."""
    per_group: Counter = Counter((c.source, c.group) for c in pool)
    out: Counter = Counter()
    for (source, _), n in per_group.items():
        out[source] += n if cap is None else min(n, cap)
    return out


def _hold_out_canary(spec: PrepareSpec, pool: list[Candidate]) -> list[Candidate]:
    """Whole media files, seeded order, skipping files that would starve a quota."""
    fraction, count = spec.canary.fraction, spec.canary.count
    if count is not None:  # CanarySpec: count >= 1, and only one of the two is set
        target = count
    elif fraction is not None:
        target = max(1, round(fraction * len(pool)))
    else:
        return []
    cap = spec.max_prompts_per_media
    groups: dict[str, list[Candidate]] = {}
    for candidate in pool:
        groups.setdefault(candidate.group, []).append(candidate)
    available = _available(pool, cap)
    rng = random.Random(f"{spec.seed}:canary")
    keys = sorted(groups)
    rng.shuffle(keys)
    canary: list[Candidate] = []
    for key in keys:
        if len(canary) >= target:
            break
        loss = _available(groups[key], cap)
        if any(
            spec.sources[s].quota is not None and available[s] - n < spec.sources[s].quota
            for s, n in loss.items()
        ):
            continue
        members = list(groups[key])
        rng.shuffle(members)
        canary.extend(members[: min(cap or len(members), target - len(canary))])
        available.subtract(loss)
    if len(canary) < target:
        raise DataError(
            f"canary needs {target} samples but only {len(canary)} can be held out on media "
            "disjoint from training without leaving a source below its quota; lower "
            "canary.count/fraction or the quotas, or add data"
        )
    return canary


def _fill_quotas(
    spec: PrepareSpec, pool: list[Candidate], stats: dict[str, Counter]
) -> tuple[list[Candidate], list[int], list[str]]:
    """Tightest quota first; seeded order per source; at most `cap` prompts per media file.
    Returns the selection, the source order used and one message per short source."""
    cap = spec.max_prompts_per_media
    available = _available(pool, cap)
    by_source: dict[int, list[Candidate]] = {}
    for candidate in pool:
        by_source.setdefault(candidate.source, []).append(candidate)
    indices = range(len(spec.sources))
    quotas = {i: q for i in indices if (q := spec.sources[i].quota) is not None}
    order = sorted(quotas, key=lambda i: (available[i] / quotas[i], i))
    order += [i for i in indices if spec.sources[i].quota is None]
    used: Counter = Counter()
    selected: list[Candidate] = []
    shortfalls = []
    for index in order:
        source, counts = spec.sources[index], stats[spec.sources[index].name]
        candidates = list(by_source.get(index, []))
        random.Random(f"{spec.seed}:source:{source.name}").shuffle(candidates)
        for candidate in candidates:
            if counts["selected"] == source.quota:
                break
            if cap is not None and candidate.has_media and used[candidate.group] >= cap:
                counts["media_capped"] += 1
                continue
            used[candidate.group] += 1
            selected.append(candidate)
            counts["selected"] += 1
        if source.quota is not None and counts["selected"] < source.quota:
            shortfalls.append(
                f"source {source.name!r} is short by {source.quota - counts['selected']} "
                f"(quota {source.quota}, selected {counts['selected']}: {counts['loaded']} loaded, "
                f"{counts['subtype_filtered']} filtered by subtype, {counts['leaked']} leaked, "
                f"{counts['duplicates']} duplicates, {counts['canary'] + counts['canary_media']} "
                f"on canary media, {counts['media_capped']} over max_prompts_per_media={cap})"
            )
    return selected, order, shortfalls


def _hold_out_and_fill(
    spec: PrepareSpec, pool: list[Candidate], stats: dict[str, Counter]
) -> tuple[list[Candidate], list[Candidate], list[int]]:
    canary = _hold_out_canary(spec, pool)
    canary_groups = {c.group for c in canary}
    held = {c.position for c in canary}
    train_pool = []
    for candidate in pool:
        name = spec.sources[candidate.source].name
        if candidate.position in held:
            stats[name]["canary"] += 1
        elif candidate.group in canary_groups:
            stats[name]["canary_media"] += 1
        else:
            train_pool.append(candidate)
    train, order, shortfalls = _fill_quotas(spec, train_pool, stats)
    if shortfalls:
        raise DataError(
            "quota cannot be met: "
            + "; ".join(shortfalls)
            + "; lower the quota, add data or raise max_prompts_per_media"
        )
    return train, canary, order


def select_mixture(spec: PrepareSpec, base: Path) -> Mixture:
    """Load, exclude leaks and duplicates, hold out the canary and fill the quotas.
    Relative paths are relative to `base`. Raises `DataError` naming every short source."""
    leaks = LeakIndex(spec.leak_match)
    benchmarks: dict[str, dict[str, Any]] = {}
    for bench in spec.benchmarks:
        records, _ = _load(bench, base)
        for record in records:
            leaks.add(bench.name, record)
        benchmarks[bench.name] = {
            "records": len(records),
            "excluded": dict.fromkeys(leaks.rules, 0),
        }
    stats: dict[str, Counter[str]] = {s.name: Counter() for s in spec.sources}
    pool: list[Candidate] = []
    first_source: dict[str, int] = {}
    position = 0
    for index, source in enumerate(spec.sources):
        records, skipped = _load(source, base, source.skip_invalid)
        counts = stats[source.name]
        counts.update(loaded=len(records), skipped_invalid=skipped)
        wanted = {s.strip().casefold() for s in source.subtypes}
        for record in records:
            position += 1
            if wanted and (record.subtype or "").strip().casefold() not in wanted:
                counts["subtype_filtered"] += 1
                continue
            candidate = _candidate(record, index, position)
            found = leaks.matches(record, candidate.identity)
            for bench_name, rule in found.items():
                benchmarks[bench_name]["excluded"][rule] += 1
            if found:
                counts["leaked"] += 1
            elif candidate.identity in first_source:
                counts["duplicates"] += 1
                across = first_source[candidate.identity] != index
                counts["duplicates_across" if across else "duplicates_within"] += 1
            else:
                first_source[candidate.identity] = index
                pool.append(candidate)
                counts["eligible"] += 1
    for entry in benchmarks.values():
        entry["excluded"]["total"] = sum(entry["excluded"].values())
    train, canary, order = _hold_out_and_fill(spec, pool, stats)
    return Mixture(
        train=sorted(train, key=lambda c: c.position),
        canary=sorted(canary, key=lambda c: c.position),
        sources={name: {k: counts[k] for k in _COUNTS} for name, counts in stats.items()},
        benchmarks=benchmarks,
        selection_order=[spec.sources[i].name for i in order],
    )


# ----- outputs -----------------------------------------------------------------------------


@dataclass(frozen=True)
class PrepareResult:
    """Where `prepare` wrote its files, and the manifest it wrote."""

    train_path: Path
    canary_path: Path
    manifest_path: Path
    manifest: dict[str, Any]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _split_summary(candidates: list[Candidate]) -> dict[str, Any]:
    """Record and family counts, distinct media files and how many of them exist on disk."""
    files: dict[str, str] = {}
    for c in candidates:
        if c.has_media:
            # has_media: the record names a media file (identity.media_paths); no loader pairs
            # a video of inline frames with an image file, so `media` is that file
            files[c.group] = cast(str, cast("MediaRef", c.record.media).path)
    return {
        "records": len(candidates),
        "families": dict(sorted(Counter(c.record.family.value for c in candidates).items())),
        "media_files": len(files),
        "media_files_present": sum(os.path.isfile(p) for p in files.values()),
    }


def _write_split(path: Path, spec: PrepareSpec, candidates: list[Candidate]) -> Path:
    return write_records(
        path,
        (
            dataclasses.replace(c.record, id=f"{spec.sources[c.source].name}/{c.record.id}")
            for c in candidates
        ),
    )


def build_manifest(
    spec: PrepareSpec, mixture: Mixture, sources_file: Path, outputs: dict[str, Path]
) -> dict[str, Any]:
    """Everything a paper needs to describe the set: settings, counts, checksums."""
    base = sources_file.parent
    sources = {}
    for source in spec.sources:
        train = [c for c in mixture.train if spec.sources[c.source] is source]
        sources[source.name] = {
            **dataclasses.asdict(source),
            "sha256": _sha256(_absolute(base, source.path)),
            "counts": mixture.sources[source.name],
            "families": _split_summary(train)["families"],
        }
    benchmarks = {
        bench.name: {
            **dataclasses.asdict(bench),
            **mixture.benchmarks[bench.name],
            "sha256": _sha256(_absolute(base, bench.path)),
        }
        for bench in spec.benchmarks
    }
    totals: Counter[str] = Counter()
    for counts in mixture.sources.values():
        totals.update(counts)
    return {
        "videorl_version": videorl.__version__,
        "sources_file": {"path": sources_file.name, "sha256": _sha256(sources_file)},
        "seed": spec.seed,
        "leak_match": spec.leak_match,
        "max_prompts_per_media": spec.max_prompts_per_media,
        "selection_order": mixture.selection_order,
        "sources": sources,
        "benchmarks": benchmarks,
        "exclusions": {
            k: totals[k]
            for k in (
                "skipped_invalid",
                "subtype_filtered",
                "leaked",
                "duplicates",
                "canary_media",
                "media_capped",
            )
        },
        "canary": {"requested": dataclasses.asdict(spec.canary), **_split_summary(mixture.canary)},
        "train": _split_summary(mixture.train),
        "outputs": {name: {"sha256": _sha256(path)} for name, path in outputs.items()},
    }


def _refuse_inputs_inside(out: Path, spec: PrepareSpec, sources_file: Path) -> None:
    """`--out` may not hold the sources file or any annotation file it reads."""
    base = sources_file.parent
    inputs = [("sources file", sources_file)]
    inputs += [(f"source {s.name!r}", _absolute(base, s.path)) for s in spec.sources]
    inputs += [(f"benchmark {b.name!r}", _absolute(base, b.path)) for b in spec.benchmarks]
    refuse_own_inputs(out, inputs, "--out")


def prepare(
    sources_file: str | os.PathLike, out_dir: str | os.PathLike, *, overwrite: bool = False
) -> PrepareResult:
    """Read SOURCES.yaml, select the mixture and write train.jsonl, canary.jsonl and
    manifest.json to `out_dir`. Nothing is written if a quota or the canary cannot be met,
    if `out_dir` holds files (unless `overwrite`) or if it holds one of the inputs. The three
    files are written under temporary names and renamed at the end (manifest last)."""
    sources_file = Path(os.path.abspath(sources_file))
    spec = load_spec(sources_file)
    out = Path(out_dir)
    _refuse_inputs_inside(out, spec, sources_file)
    mixture = select_mixture(spec, sources_file.parent)
    refuse_nonempty(out, overwrite=overwrite, option="--out")
    staged = {name: out / f"{TMP_PREFIX}{os.getpid()}-{name}" for name in OUTPUTS}
    try:
        _write_split(staged["train.jsonl"], spec, mixture.train)
        _write_split(staged["canary.jsonl"], spec, mixture.canary)
        outputs = {name: staged[name] for name in ("train.jsonl", "canary.jsonl")}
        manifest = build_manifest(spec, mixture, sources_file, outputs)
        staged["manifest.json"].write_text(
            json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8"
        )
    except BaseException:
        for path in staged.values():
            path.unlink(missing_ok=True)
        raise
    for name in OUTPUTS:
        os.replace(staged[name], out / name)
    return PrepareResult(out / "train.jsonl", out / "canary.jsonl", out / "manifest.json", manifest)
