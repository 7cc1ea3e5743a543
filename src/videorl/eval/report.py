"""`report.md`: the metrics table per family, breakdowns, missing media, plots and the
worst cases with their text (the numbers come from metrics.json, nothing is recomputed)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from videorl.eval.controls import by_family
from videorl.eval.scoring import SampleResult
from videorl.eval.tools import tool_rows

WORST_CASES = 5
MAX_RESPONSE_CHARS = 600
MAX_LISTED_MISSING = 20


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.1f}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    """A Markdown table (floats with one decimal)."""
    lines = ["| " + " | ".join(_cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return lines + [""]


def _metrics_section(families: dict[str, Any]) -> list[str]:
    lines = [
        "## Metrics",
        "",
        "In percent. `unparsed`: answers the lenient parser could not read (scored 0).",
        "",
    ]
    for family, summary in families.items():
        names = list(summary["metrics"])
        counts = summary["counts"]
        lines.append(f"### {family}")
        lines.append("")
        lines += table(
            ["n", *names, "unparsed", "no media", "no prediction"],
            [
                [
                    summary["n"],
                    *summary["metrics"].values(),
                    counts["unparsed"],
                    counts["missing_media"] + counts["media_error"],
                    counts["no_prediction"],
                ]
            ],
        )
    return lines


def _controls_section(controls: dict[str, Any]) -> list[str]:
    """Per family: each metric on the real media and on each control, and the video gain."""
    if not controls:
        return []
    lines = [
        "## Video controls",
        "",
        (
            "The same records answered on control media made from the decoded frames (frozen: "
            "every frame the first; reversed; shuffled; blank: constant grey). Gain = real - "
            "control, over the records the control applies to (temporal controls: videos "
            "only). A model that ignores the video has gain 0."
        ),
        "",
    ]
    for family, present in by_family(controls).items():
        metrics = list(next(iter(present.values()))["real"][family])
        header = ["metric", *(f"real / {c} / gain" for c in present)]
        rows = [
            [
                metric,
                *(
                    f"{e['real'][family][metric]:.1f} / "
                    f"{e['families'][family][metric]:.1f} / "
                    f"{e['video_gain'][family][metric]:+.1f}"
                    for e in present.values()
                ),
            ]
            for metric in metrics
        ]
        lines += [f"### {family}", "", *table(header, rows)]
    return lines


def _tools_section(metrics: dict[str, Any]) -> list[str]:
    """Tool use and each metric with and without tools (`--tools`)."""
    entry = metrics.get("tools")
    if not entry:
        return []
    use = entry["use"]
    lines = [
        "## Tools",
        "",
        (
            f"Answered with {', '.join(entry['tools'])} in the multi-turn tool loop (at most "
            f"{entry['max_turns']} model turns), then again in one turn from prompts without "
            "the tool list; gain = with tools - without tools, over the same records."
        ),
        "",
    ]
    if use.get("answers"):
        lines += table(
            [
                "answers",
                "calls / answer",
                "errors / answer",
                "answers with calls",
                "turns",
                "max turns",
            ],
            [
                [
                    use["answers"],
                    f"{use['calls_per_answer']:.2f}",
                    f"{use['errors_per_answer']:.2f}",
                    f"{100 * use['answers_with_calls']:.0f}%",
                    f"{use['turns_mean']:.2f}",
                    use["turns_max"],
                ]
            ],
        )
    rows = [
        [family, metric, on, off, f"{gain:+.1f}"]
        for family, metric, on, off, gain in tool_rows(metrics)
    ]
    return lines + table(["family", "metric", "with tools", "without tools", "gain"], rows)


def _breakdown_section(families: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    for family, summary in families.items():
        for by, groups in summary["breakdowns"].items():
            names = list(dict.fromkeys(k for g in groups.values() for k in g if k != "n"))
            lines.append(f"### {family} by {by.replace('_', ' ')}")
            lines.append("")
            lines += table(
                [by, "n", *names],
                [[name, int(g["n"]), *(g.get(k, "") for k in names)] for name, g in groups.items()],
            )
    return (["## Breakdowns", "", *lines]) if lines else []


def _missing_section(metrics: dict[str, Any]) -> list[str]:
    missing = metrics["missing_media"]
    if not missing["count"]:
        return []
    lines = [
        "## Missing media",
        "",
        (
            f"{missing['count']} of {metrics['benchmark']['records']} records have missing or "
            "undecodable media. They stay in the denominator with score 0; `metrics.json` also "
            "reports `families_with_media`, the metrics over the other records."
        ),
        "",
    ]
    lines += [f"- `{rid}`" for rid in missing["records"][:MAX_LISTED_MISSING]]
    if missing["count"] > MAX_LISTED_MISSING:
        lines.append(f"- ... and {missing['count'] - MAX_LISTED_MISSING} more (see metrics.json)")
    return lines + [""]


def _plots_section(plots: dict[str, Path], base: Path) -> list[str]:
    if not plots:
        return []
    lines = ["## Plots", ""]
    for name, path in plots.items():
        lines += [f"![{name}]({Path(os.path.relpath(path, base)).as_posix()})", ""]
    return lines


def _fence(text: str) -> list[str]:
    shown = text if len(text) <= MAX_RESPONSE_CHARS else text[:MAX_RESPONSE_CHARS] + " [...]"
    return ["````text", shown.replace("````", "'''"), "````"]


def _worst_section(results: Sequence[SampleResult], k: int) -> list[str]:
    answered = [r for r in results if r.response is not None]
    families = list(dict.fromkeys(r.family for r in answered))
    if not families:
        return []
    lines = ["## Worst cases", "", f"The {k} lowest-scoring answered samples per family.", ""]
    for family in families:
        worst = sorted((r for r in answered if r.family == family), key=lambda r: (r.score, r.id))[
            :k
        ]
        lines += [f"### {family.value}", ""]
        for r in worst:
            lines += [
                f"**{r.id}** ({r.subtype or '-'}): score {r.score:.3f}, {r.status}",
                "",
                f"- query: {r.problem[:300]}",
                f"- ground truth: `{json.dumps(r.ground_truth)}`",
                f"- parsed prediction: `{json.dumps(r.prediction)}`",
                "",
                *_fence(r.response or ""),
                "",
            ]
    return lines


def write_report(
    path: Path,
    metrics: dict[str, Any],
    results: Sequence[SampleResult],
    plots: dict[str, Path],
    worst: int = WORST_CASES,
) -> Path:
    """Write report.md next to the plots it links (relative links)."""
    bench, counts = metrics["benchmark"], metrics["counts"]
    source = metrics.get("source", {})
    header = [
        f"# Evaluation: {bench['name']}",
        "",
        f"- benchmark file: `{bench['path']}` ({bench['records']} records"
        + (
            f", {bench['skipped_invalid_rows']} invalid rows skipped"
            if bench["skipped_invalid_rows"]
            else ""
        )
        + ")",
        *(f"- {key}: `{value}`" for key, value in source.items() if key != "video"),
        f"- created: {metrics['created']}",
        "- records by status: " + ", ".join(f"{k} {v}" for k, v in counts.items()),
        f"- convention: {metrics['convention']}",
        "",
    ]
    lines = (
        header
        + _metrics_section(metrics["families"])
        + _controls_section(metrics.get("controls", {}))
        + _tools_section(metrics)
        + _breakdown_section(metrics["families"])
        + _missing_section(metrics)
        + _plots_section(plots, path.parent)
        + _worst_section(results, worst)
    )
    path.write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")
    return path
