"""`videorl eval`: answer a benchmark, score it, and write the outputs.

    evaluate(settings, backend=HFBackend.from_path(...))        # run a model
    evaluate(settings, predictions="other/predictions.jsonl")   # score existing answers

Steps: resolve the benchmark (`benchmarks`), load its records, list records whose media
is missing, answer the remaining records in batches with a progress bar, appending each
answer to `OUT/predictions.jsonl` at once (a rerun skips ids already answered, so an
interrupted run continues where it stopped), then score every record (`scoring`) and write
`metrics.json`, `samples.jsonl` (per-sample values), `plots/*.png` and `report.md`.
With `controls`, the same records are answered again on control media (frozen, reversed,
shuffled, blank: `eval/controls.py`) and `metrics.json` gains each control's metrics and
the video gain (real minus control). With a backend that has tools (`--tools`), the records
are answered with the multi-turn tool loop, again without tools, and `metrics.json` gains
the tool use and the score with and without tools (`eval/tools.py`).
Missing media and failed decodes are counted and listed, never dropped (see
`scoring.CONVENTION`); `metrics.json` also has the numbers over the records with media.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import shutil
import time
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from videorl.config.constraints import Checked, Constraint, Ge
from videorl.data.loaders import check_media, load_records
from videorl.data.records import TaskRecord
from videorl.errors import ConfigError, DataError, MediaError
from videorl.eval.backends import Backend, answer_items
from videorl.eval.benchmarks import Benchmark, resolve_benchmark
from videorl.eval.controls import control_applies, control_summary
from videorl.eval.out_dir import (
    CONTROLS_DIR,
    METRICS,
    NO_TOOLS_DIR,
    PLOTS,
    PREDICTIONS,
    REPORT,
    SAMPLES,
)
from videorl.eval.predictions import Prediction, PredictionWriter, finished_ids, read_predictions
from videorl.eval.scoring import (
    CONVENTION,
    MEDIA_ERROR,
    MISSING_MEDIA,
    NO_PREDICTION,
    STATUSES,
    SampleResult,
    score_record,
    summarize,
)
from videorl.eval.tools import tools_summary
from videorl.video.cache import VideoCache
from videorl.video.controls import ControlledVideos, check_controls
from videorl.video.decode import VideoConfig

logger = logging.getLogger(__name__)

MAX_LISTED = 200  # missing-media ids written to metrics.json (all are counted)


@dataclass(frozen=True)
class EvalSettings(Checked):
    """What to evaluate and how media are read (the answer producer is separate)."""

    benchmark: str
    out_dir: Path
    video_root: str | None = None
    benchmark_root: str | None = None
    max_samples: Annotated[int | None, Ge(1)] = None
    batch_size: Annotated[int, Ge(1)] = 8
    video: VideoConfig = field(default_factory=VideoConfig)
    progress: bool = True
    controls: tuple[str, ...] = ()  # video controls (`video.controls.CONTROLS`) to answer too
    skip_invalid: bool = False  # skip and count invalid benchmark rows (`--skip-invalid`)

    @classmethod
    def refusal(cls, key: str, value: Any, constraint: Constraint) -> str:
        """Named as `videorl eval`'s flag: `--max-samples=0 must be >= 1 (omit it for all)`."""
        omit = " (omit it for all)" if key == "max_samples" else ""
        return f"--{key.replace('_', '-')}={value!r} must be {constraint.rule()}{omit}"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_controls(self.controls, "control", " (comma-separated)")


@dataclass(frozen=True)
class EvalOutputs:
    """The scored run: metrics (as written to metrics.json), per-sample results, file paths."""

    metrics: dict[str, Any]
    results: list[SampleResult]
    out_dir: Path
    plots: dict[str, Path]

    @property
    def predictions(self) -> Path:
        return self.out_dir / PREDICTIONS

    @property
    def metrics_path(self) -> Path:
        return self.out_dir / METRICS

    @property
    def report(self) -> Path:
        return self.out_dir / REPORT


def load_benchmark(settings: EvalSettings) -> tuple[Benchmark, list[TaskRecord], int]:
    """(benchmark, its first `max_samples` records, rows skipped as invalid)."""
    benchmark = resolve_benchmark(
        settings.benchmark, benchmark_root=settings.benchmark_root, video_root=settings.video_root
    )
    loaded = load_records(
        benchmark.path,
        format=benchmark.format,
        family=benchmark.family,
        video_root=settings.video_root,
        split=benchmark.split,
        skip_invalid=settings.skip_invalid,
        skip_fix="pass --skip-invalid",
    )
    records = loaded.records[: settings.max_samples] if settings.max_samples else loaded.records
    if not records:
        raise ConfigError(f"benchmark {benchmark.path} has no records; check the file")
    counts = Counter(r.id for r in records)
    repeated = [rid for rid, n in counts.items() if n > 1]
    if repeated:
        raise DataError(
            f"benchmark {benchmark.path}: {len(repeated)} record ids occur more than once (first: "
            f"{', '.join(repeated[:3])}); predictions are matched by id, so give each row a "
            "unique id/qid"
        )
    return benchmark, records, loaded.skipped


def missing_media(records: Sequence[TaskRecord]) -> dict[str, str]:
    """Record id -> media path, for records whose media file is missing or empty."""
    missing = set(check_media(records))
    return {
        r.id: r.media.path
        for r in records
        if r.media is not None and r.media.path is not None and r.media.path in missing
    }


def _progress(enabled: bool, description: str, total: int) -> Any:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        disable=not enabled,
    )
    return progress, progress.add_task(description, total=total)


def in_model_frame(record: TaskRecord, media: Any, backend: Backend) -> TaskRecord:
    """The record with its boxes in the backend model's coordinate convention (its
    `coordinates`: `abs` pixels of the decoded frames, `norm1000`, or None = the record's)."""
    from videorl.data.coordinates import frame_size, to_model_coordinates

    return to_model_coordinates(record, getattr(backend, "coordinates", None), frame_size(media))


def answer_frame(record: TaskRecord) -> dict[str, Any] | None:
    """The coordinate frame a converted record's answer is in (None for families without
    boxes), written next to the prediction so that scoring converts the ground truth alike."""
    from videorl.data.records import (
        BoxAnswer,
        SegmentationAnswer,
        SpatioTemporalAnswer,
        TrackingAnswer,
    )

    boxed = (BoxAnswer, SegmentationAnswer, SpatioTemporalAnswer, TrackingAnswer)
    if not isinstance(record.answer, boxed):
        return None
    return {"box_format": record.box_format, "width": record.width, "height": record.height}


def reframe(record: TaskRecord, frame: dict[str, Any] | None) -> TaskRecord:
    """The ground truth in the prediction's coordinate frame (as written by `answer_frame`)."""
    from videorl.data.coordinates import to_model_coordinates

    if not frame or frame.get("box_format") not in ("abs", "norm1000"):
        return record
    size = (frame.get("width") or 0, frame.get("height") or 0)
    if frame["box_format"] == "abs" and not all(size):
        return record
    return to_model_coordinates(record, frame["box_format"], size)


def generate_predictions(
    records: Sequence[TaskRecord],
    backend: Backend,
    path: Path,
    *,
    videos: VideoCache,
    batch_size: int,
    skip: Collection[str] = (),
    progress: bool = True,
) -> int:
    """Answer every record not yet in `path` (nor in `skip`), appending as batches finish;
    returns how many records were answered now. Undecodable media become error lines."""
    done = finished_ids(path)
    skipped = set(skip)
    todo = [r for r in records if r.id not in done and r.id not in skipped]
    if not todo:
        return 0
    bar, task = _progress(progress, f"answering ({backend.label})", len(todo))
    answered = 0
    with bar, PredictionWriter(path) as writer:
        for start in range(0, len(todo), batch_size):
            items = []
            for record in todo[start : start + batch_size]:
                try:
                    items.append(
                        (record, videos.get(record.media) if record.media is not None else None)
                    )
                except MediaError as err:
                    logger.warning("record %s: %s", record.id, err)
                    writer.write(Prediction(record.id, None, str(err)))
                    bar.advance(task)
            originals = [record for record, _ in items]
            items = [(in_model_frame(record, media, backend), media) for record, media in items]
            control = getattr(videos, "control", None)  # ControlledVideos: a control run
            answers = answer_items(backend, items, control) if items else []
            seen = getattr(backend, "input_fingerprints", {})  # what the model was given
            for (record, _), original, (text, use) in zip(items, originals, answers, strict=True):
                frame = None if record is original else answer_frame(record)
                tools = use.to_dict() if use is not None else None
                given = seen.get(record.id)
                writer.write(
                    Prediction(record.id, text, frame=frame, tools=tools, input_fingerprint=given)
                )
                answered += 1
                bar.advance(task)
    return answered


def score_all(
    records: Sequence[TaskRecord], predictions: dict[str, Prediction], missing: dict[str, str]
) -> list[SampleResult]:
    """Every record scored: its response when it has one, else as unanswered with the reason."""
    results = []
    for record in records:
        found = predictions.get(record.id)
        if found is not None and found.response is not None:
            results.append(score_record(reframe(record, found.frame), found.response))
        elif found is not None and found.error:
            results.append(score_record(record, None, status=MEDIA_ERROR, error=found.error))
        elif record.id in missing:
            results.append(score_record(record, None, status=MISSING_MEDIA))
        else:
            results.append(score_record(record, None, status=NO_PREDICTION))
    return results


def build_metrics(
    benchmark: Benchmark,
    results: Sequence[SampleResult],
    missing: dict[str, str],
    *,
    skipped_rows: int,
    source: dict[str, Any],
) -> dict[str, Any]:
    """The content of metrics.json."""
    counts = Counter(r.status for r in results)
    unavailable = [r for r in results if r.status in (MISSING_MEDIA, MEDIA_ERROR)]
    metrics: dict[str, Any] = {
        "benchmark": {
            "name": benchmark.name,
            "path": str(benchmark.path),
            "records": len(results),
            "skipped_invalid_rows": skipped_rows,
        },
        "source": source,
        "convention": CONVENTION,
        "counts": {status: counts.get(status, 0) for status in STATUSES},
        "missing_media": {
            "count": len(unavailable),
            "records": [r.id for r in unavailable][:MAX_LISTED],
            "files": sorted({missing.get(r.id) or r.error or "" for r in unavailable})[:MAX_LISTED],
        },
        "families": {f.value: s.to_dict() for f, s in summarize(results).items()},
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    if unavailable:
        available = [r for r in results if r.status not in (MISSING_MEDIA, MEDIA_ERROR)]
        metrics["families_with_media"] = {
            f.value: s.metrics for f, s in summarize(available).items()
        }
    return metrics


def write_outputs(
    out_dir: Path, metrics: dict[str, Any], results: Sequence[SampleResult]
) -> dict[str, Path]:
    """metrics.json, samples.jsonl, plots/*.png and report.md; returns the plots by name."""
    from videorl.eval.plots import controls_chart, write_plots
    from videorl.eval.report import write_report

    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / METRICS).write_text(json.dumps(metrics, indent=2) + "\n", encoding="utf-8")
    with (out_dir / SAMPLES).open("w", encoding="utf-8") as f:
        for result in results:
            f.write(json.dumps(result.to_dict(), ensure_ascii=False) + "\n")
    plots = write_plots(results, out_dir / PLOTS)
    if metrics.get("controls"):
        plots["Video controls"] = controls_chart(
            metrics["controls"], out_dir / PLOTS / "controls.png"
        )
    write_report(out_dir / REPORT, metrics, results, plots)
    return plots


def evaluate(
    settings: EvalSettings,
    *,
    backend: Backend | None = None,
    predictions: str | Path | None = None,
    source: dict[str, Any] | None = None,
) -> EvalOutputs:
    """Answer (with `backend`) or read (`predictions`) the benchmark's responses, score them
    (and the controls' with `settings.controls`) and write the outputs under `settings.out_dir`."""
    if (backend is None) == (predictions is None):
        raise ConfigError(
            "evaluate needs exactly one of a backend (--model/--endpoint) or --predictions"
        )
    if settings.controls and backend is None:
        raise ConfigError("--controls needs a model or an endpoint to answer the control media")
    tools = getattr(backend, "tools", None)
    benchmark, records, skipped = load_benchmark(settings)
    missing = missing_media(records)
    out_dir = Path(settings.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / PREDICTIONS
    videos = VideoCache(settings.video)
    answer = (
        None
        if backend is None
        else functools.partial(_answer, settings, backend, skip=set(missing))
    )
    if answer is not None:
        if missing:
            logger.warning(
                "%d of %d records have missing media: not run, scored 0, listed in the report",
                len(missing),
                len(records),
            )
        answer(records, path, videos)
    # else predictions is set: exactly one of the two (checked above)
    elif predictions is not None and Path(predictions).resolve() != path.resolve():
        if not Path(predictions).is_file():
            raise ConfigError(
                f"--predictions {predictions} does not exist; pass a JSONL file of "
                "{id, response} lines"
            )
        shutil.copyfile(predictions, path)
    answered = read_predictions(path)
    results = score_all(records, answered, missing)
    info = dict(source or {})
    info.setdefault("video", dataclasses.asdict(settings.video))
    metrics = build_metrics(benchmark, results, missing, skipped_rows=skipped, source=info)
    if getattr(backend, "early_exit", None) is not None:  # of this run's answers, before controls
        metrics["early_exit"] = backend.exit_summary()  # type: ignore[union-attr]
    if settings.controls:
        metrics["controls"] = {
            control: _control(control, records, results, missing, answer, videos, out_dir)
            for control in settings.controls
        }
    if tools is not None:
        plain = backend.without_tools()  # type: ignore[union-attr]
        folder = out_dir / NO_TOOLS_DIR
        folder.mkdir(parents=True, exist_ok=True)
        _answer(settings, plain, records, folder / PREDICTIONS, videos, skip=set(missing))
        without = score_all(records, read_predictions(folder / PREDICTIONS), missing)
        limits = backend.limits  # type: ignore[union-attr]
        metrics["tools"] = tools_summary(
            results,
            without,
            [answered[r.id] for r in records if r.id in answered],
            list(tools.specs),
            limits.max_turns if limits is not None else 0,
        )
    plots = write_outputs(out_dir, metrics, results)
    return EvalOutputs(metrics=metrics, results=results, out_dir=out_dir, plots=plots)


def _answer(
    settings: EvalSettings,
    backend: Backend,
    records: Sequence[TaskRecord],
    path: Path,
    videos: Any,
    *,
    skip: Collection[str],
) -> int:
    return generate_predictions(
        records,
        backend,
        path,
        videos=videos,
        batch_size=settings.batch_size,
        skip=skip,
        progress=settings.progress,
    )


def _control(
    control: str,
    records: Sequence[TaskRecord],
    real: Sequence[SampleResult],
    missing: dict[str, str],
    answer: Any,
    videos: VideoCache,
    out_dir: Path,
) -> dict[str, Any]:
    """Answer the records `control` applies to on control media; their summary and gain."""
    chosen = [r for r in records if control_applies(r, control)]
    folder = out_dir / CONTROLS_DIR / control
    folder.mkdir(parents=True, exist_ok=True)
    answer(chosen, folder / PREDICTIONS, ControlledVideos(videos, control))
    results = score_all(chosen, read_predictions(folder / PREDICTIONS), missing)
    ids = {r.id for r in chosen}
    return control_summary(results, [r for r in real if r.id in ids])
