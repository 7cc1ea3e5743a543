"""The eval runner: resumable answering, missing media, scoring existing predictions, compare."""

from __future__ import annotations

import dataclasses
import json

import pytest

from videorl.data.loaders import write_records
from videorl.data.records import MediaRef
from videorl.errors import ConfigError
from videorl.eval.compare import compare_paths
from videorl.eval.runner import EvalSettings, evaluate
from videorl.eval.scoring import score_record

from .conftest import SMALL_VIDEO, AnnotationBackend, records_of, write_jsonl


def _settings(benchmark, out, **kw) -> EvalSettings:
    return EvalSettings(
        benchmark=str(benchmark), out_dir=out, video=SMALL_VIDEO, progress=False, **kw
    )


def _lines(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_rerun_after_interruption_continues_where_it_stopped(synth_tg, tmp_path):
    settings = _settings(synth_tg, tmp_path / "out", batch_size=2)
    first = AnnotationBackend(fail_after=1)
    with pytest.raises(KeyboardInterrupt):
        evaluate(settings, backend=first)
    predictions = tmp_path / "out" / "predictions.jsonl"
    assert [row["id"] for row in _lines(predictions)] == first.calls[0] == ["tg-0000", "tg-0001"]
    with predictions.open("a") as f:
        f.write('{"id": "tg-0002", "resp')  # a line cut by the interruption
    second = AnnotationBackend()
    outputs = evaluate(settings, backend=second)
    assert second.calls == [["tg-0002", "tg-0003"], ["tg-0004", "tg-0005"]]
    assert sorted(row["id"] for row in _lines(predictions)) == [f"tg-000{i}" for i in range(6)]
    assert outputs.metrics["families"]["temporal_grounding"]["metrics"]["R1@0.7"] == 100.0
    third = AnnotationBackend()
    evaluate(settings, backend=third)
    assert third.calls == []  # everything answered: nothing to do


def test_missing_media_stays_in_the_denominator(synth_tg, tmp_path):
    records = records_of(synth_tg)
    records[1] = dataclasses.replace(records[1], video=MediaRef(path=str(tmp_path / "gone.mp4")))
    benchmark = write_records(tmp_path / "bench.jsonl", records)
    outputs = evaluate(_settings(benchmark, tmp_path / "out"), backend=AnnotationBackend())
    metrics = outputs.metrics
    assert metrics["counts"]["missing_media"] == 1
    assert metrics["missing_media"]["records"] == ["tg-0001"]
    assert metrics["missing_media"]["files"] == [str(tmp_path / "gone.mp4")]
    tg = metrics["families"]["temporal_grounding"]
    assert tg["n"] == 6 and tg["metrics"]["R1@0.5"] == pytest.approx(500 / 6)
    assert metrics["families_with_media"]["temporal_grounding"]["R1@0.5"] == 100.0
    report = outputs.report.read_text()
    assert "## Missing media" in report and "`tg-0001`" in report


VTG_ROWS = [
    # Charades-STA style: one window.
    {
        "qid": 1,
        "query": "opens the door",
        "duration": 10.0,
        "vid": "a",
        "relevant_windows": [[2, 6]],
    },
    # QVHighlights style: several windows, the best match counts.
    {
        "qid": 2,
        "query": "a dog runs",
        "duration": 30.0,
        "vid": "b",
        "relevant_windows": [[0, 4], [10, 20]],
    },
    # Unparseable answer: IoU 0, still counted.
    {"qid": 3, "query": "it rains", "duration": 10.0, "vid": "c", "relevant_windows": [[1, 2]]},
    # TVGBench style clip [10, 40] of a 60 s video: windows shift to [0, 10] and [25, 30].
    {
        "qid": 4,
        "query": "she waves",
        "duration": 60.0,
        "vid": "d",
        "relevant_windows": [[5, 20], [35, 50]],
        "video_start": 10.0,
        "video_end": 40.0,
    },
]
VTG_ANSWERS = {
    "1": "<answer>3 to 7</answer>",
    "2": "from 12 to 22 seconds",
    "3": "I cannot tell.",
    "4": "[26, 30]",
}


def test_scoring_existing_vtg_predictions(tmp_path):
    benchmark = write_jsonl(tmp_path / "vtg.jsonl", VTG_ROWS)
    predictions = write_jsonl(
        tmp_path / "preds.jsonl", [{"qid": k, "prediction": v} for k, v in VTG_ANSWERS.items()]
    )
    outputs = evaluate(_settings(benchmark, tmp_path / "out"), predictions=predictions)
    ious = {r.id: r.values["iou"] for r in outputs.results}
    assert ious == pytest.approx({"1": 0.6, "2": 2 / 3, "3": 0.0, "4": 0.8})
    tg = outputs.metrics["families"]["temporal_grounding"]
    assert tg["metrics"] == pytest.approx(
        {"R1@0.3": 75.0, "R1@0.5": 75.0, "R1@0.7": 25.0, "mIoU": 100 * (0.6 + 2 / 3 + 0.8) / 4}
    )
    assert tg["counts"]["unparsed"] == 1
    for name in ("predictions.jsonl", "metrics.json", "report.md", "samples.jsonl"):
        assert (tmp_path / "out" / name).is_file()


def test_compare_two_runs(tmp_path):
    benchmark = write_jsonl(tmp_path / "vtg.jsonl", VTG_ROWS)
    better = write_jsonl(
        tmp_path / "b.jsonl",
        [{"id": k, "response": v} for k, v in {**VTG_ANSWERS, "3": "1 to 2"}.items()],
    )
    evaluate(
        _settings(benchmark, tmp_path / "a"),
        predictions=write_jsonl(
            tmp_path / "a.jsonl", [{"id": k, "response": v} for k, v in VTG_ANSWERS.items()]
        ),
    )
    comparison = compare_paths(
        tmp_path / "a" / "metrics.json", better, settings=_settings(benchmark, tmp_path / "x")
    )
    rows = {(f, m): (a, b, d) for f, m, a, b, d in comparison.rows}
    assert rows[("temporal_grounding", "R1@0.7")] == pytest.approx((25.0, 50.0, 25.0))
    assert comparison.paired == {"shared": 4, "b_better": 1, "a_better": 0, "equal": 3}


def test_perfect_answers_score_one_in_every_family(synth_all):
    from videorl.rewards.annotation import serialize_annotation

    for record in records_of(synth_all):
        result = score_record(record, serialize_annotation(record))
        if record.family.value == "segmentation":  # a box rasterized vs a round mask
            assert 0.5 < result.score <= 1.0
        else:
            assert result.score == pytest.approx(1.0), record.id


def test_duplicate_ids_are_refused(tmp_path):
    from videorl.errors import DataError

    rows = [VTG_ROWS[0], {**VTG_ROWS[2], "qid": 1}]
    benchmark = write_jsonl(tmp_path / "dup.jsonl", rows)
    with pytest.raises(DataError, match="occur more than once.*unique id"):
        evaluate(_settings(benchmark, tmp_path / "out"), predictions=benchmark)


def test_undecodable_media_is_counted_and_retried(synth_tg, tmp_path):
    records = records_of(synth_tg)[:3]
    broken = tmp_path / "broken.mp4"
    broken.write_bytes(b"not a video at all")
    records[2] = dataclasses.replace(
        records[2], video=dataclasses.replace(records[2].video, path=str(broken))
    )
    settings = _settings(write_records(tmp_path / "bench.jsonl", records), tmp_path / "out")
    outputs = evaluate(settings, backend=AnnotationBackend())
    assert outputs.metrics["counts"]["media_error"] == 1
    assert outputs.metrics["missing_media"]["records"] == ["tg-0002"]
    assert outputs.metrics["families"]["temporal_grounding"]["n"] == 3
    again = AnnotationBackend()
    evaluate(settings, backend=again)
    assert again.calls == []  # decoding failed again before the backend was asked
    assert "cannot decode video" in outputs.results[2].error  # type: ignore[operator]  # set here: a None fails the test too


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"batch_size": 0}, r"^--batch-size=0 must be >= 1$"),
        ({"max_samples": 0}, r"^--max-samples=0 must be >= 1 \(omit it for all\)$"),
    ],
)
def test_a_setting_out_of_range_names_its_flag(tmp_path, settings, message):
    with pytest.raises(ConfigError, match=message):
        _settings(tmp_path / "bench.jsonl", tmp_path / "out", **settings)
