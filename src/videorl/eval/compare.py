"""`videorl eval --compare A B`: the metric deltas `B - A` between two evaluations.

A side is a `metrics.json`, an eval output folder, or a predictions file. An evaluation
with `--controls` adds rows `FAMILY [CONTROL]` (the score on the control media) and
`FAMILY [gain vs CONTROL]` (real minus control), so the table shows how the video gain moved. A predictions
file is scored against `--benchmark` when given (same parsing and metrics as `eval`), else
the `metrics.json` beside it is used. When both sides have per-sample scores
(`samples.jsonl` beside them, or scored here) the table adds a paired count over the
shared records: how often B's per-sample score is higher, lower or equal.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from videorl.errors import ConfigError
from videorl.eval.out_dir import METRICS, PREDICTIONS, SAMPLES
from videorl.eval.predictions import read_predictions

if TYPE_CHECKING:
    from videorl.eval.runner import EvalSettings


@dataclass(frozen=True)
class Side:
    """One evaluation: metrics per family (percent) and per-sample scores by (family, id)."""

    label: str
    families: dict[str, dict[str, float]]
    scores: dict[str, float]


@dataclass(frozen=True)
class Comparison:
    a: Side
    b: Side
    rows: list[
        tuple[str, str, float | None, float | None, float | None]
    ]  # family, metric, A, B, B - A
    paired: dict[str, int]  # b_better, a_better, equal over shared records (empty if unknown)


def _read_samples(path: Path) -> dict[str, float]:
    if not path.is_file():
        return {}
    rows = (
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    )
    return {f"{r['family']}/{r['id']}": float(r["score"]) for r in rows}


def control_families(controls: dict[str, Any]) -> dict[str, dict[str, float]]:
    """`FAMILY [CONTROL]` and `FAMILY [gain vs CONTROL]` metric rows of metrics.json's controls."""
    out: dict[str, dict[str, float]] = {}
    for control, entry in controls.items():
        for family, metrics in entry["families"].items():
            out[f"{family} [{control}]"] = metrics
        for family, gains in entry["video_gain"].items():
            out[f"{family} [gain vs {control}]"] = gains
    return out


def load_side(path: str | Path, *, settings: EvalSettings | None = None) -> Side:
    """Read or score one side (see the module docstring)."""
    path = Path(path)
    if path.is_dir():
        path = path / METRICS
    if path.suffix == ".json":
        if not path.is_file():
            raise ConfigError(
                f"--compare: {path} does not exist; pass a metrics.json, an eval folder or "
                "a predictions file"
            )
        metrics = json.loads(path.read_text(encoding="utf-8"))
        families = {f: s["metrics"] for f, s in metrics.get("families", {}).items()}
        families.update(control_families(metrics.get("controls", {})))
        return Side(str(path), families, _read_samples(path.parent / SAMPLES))
    if not path.is_file():
        raise ConfigError(f"--compare: {path} does not exist")
    if settings is not None:
        from videorl.eval.runner import build_metrics, load_benchmark, missing_media, score_all

        benchmark, records, skipped = load_benchmark(settings)
        missing = missing_media(records)
        results = score_all(records, read_predictions(path), missing)
        metrics = build_metrics(benchmark, results, missing, skipped_rows=skipped, source={})
        families = {f: s["metrics"] for f, s in metrics["families"].items()}
        return Side(str(path), families, {f"{r.family.value}/{r.id}": r.score for r in results})
    beside = path.parent / METRICS
    if beside.is_file() and path.name == PREDICTIONS:
        return load_side(beside)
    raise ConfigError(
        f"--compare: {path} is a predictions file without a metrics.json beside it; add "
        "--benchmark NAME|FILE to score it"
    )


def compare(a: Side, b: Side) -> Comparison:
    """Rows for every (family, metric) of either side; paired counts over shared samples."""
    rows = []
    for family in dict.fromkeys([*a.families, *b.families]):
        left, right = a.families.get(family, {}), b.families.get(family, {})
        for metric in dict.fromkeys([*left, *right]):
            va, vb = left.get(metric), right.get(metric)
            rows.append((family, metric, va, vb, None if va is None or vb is None else vb - va))
    shared = a.scores.keys() & b.scores.keys()
    paired: dict[str, int] = {}
    if shared:
        paired = {
            "shared": len(shared),
            "b_better": sum(b.scores[k] > a.scores[k] for k in shared),
            "a_better": sum(a.scores[k] > b.scores[k] for k in shared),
            "equal": sum(a.scores[k] == b.scores[k] for k in shared),
        }
    return Comparison(a, b, rows, paired)


def to_markdown(comparison: Comparison) -> str:
    """The delta table (and the paired counts) as Markdown."""

    def number(value: float | None, signed: bool = False) -> str:
        return "-" if value is None else (f"{value:+.1f}" if signed else f"{value:.1f}")

    lines = [
        f"A: `{comparison.a.label}`",
        "",
        f"B: `{comparison.b.label}`",
        "",
        "| family | metric | A | B | B - A |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {f} | {m} | {number(va)} | {number(vb)} | {number(d, True)} |"
        for f, m, va, vb, d in comparison.rows
    ]
    if comparison.paired:
        p = comparison.paired
        lines += [
            "",
            (
                f"Per sample over {p['shared']} shared records: B higher {p['b_better']}, "
                f"A higher {p['a_better']}, equal {p['equal']}."
            ),
        ]
    return "\n".join(lines) + "\n"


def compare_paths(
    a: str | Path, b: str | Path, *, settings: EvalSettings | None = None
) -> Comparison:
    """Load both sides (scoring predictions files against `settings.benchmark` when given)
    and compare them."""
    return compare(load_side(a, settings=settings), load_side(b, settings=settings))
