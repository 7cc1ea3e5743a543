"""`videorl eval --controls`: a model that reads the frames gains from the real video, a
blind one gains exactly 0; images get the blank control only; compare and the report show
the gains."""

from __future__ import annotations

import json

import pytest
import torch

from videorl.data.families import Family
from videorl.errors import ConfigError
from videorl.eval.compare import compare_paths
from videorl.eval.runner import EvalSettings, evaluate
from videorl.video.decode import VideoConfig

from .conftest import AnnotationBackend

# 8 frames at 2 fps: an event of >= 1.5 s is seen in at least 3 of them
VIDEO = VideoConfig(
    fps=2.0, min_frames=2, max_frames=16, min_pixels=28 * 28, max_pixels=9 * 28 * 28
)


class FrameReader:
    """Answers temporal grounding from the pixels: the event is where the frames differ
    from both the first and the last frame (the synthetic timelines are still outside
    their event); no such frame: a zero-length answer at 0."""

    label = "frame-reader"

    def respond(self, items):
        return [self._window(media) for _, media in items]

    @staticmethod
    def _window(media) -> str:
        frames = media.frames.float()
        first, last = frames[0], frames[-1]
        moved = [
            k
            for k in range(len(frames))
            if (frames[k] - first).abs().amax() > 40 and (frames[k] - last).abs().amax() > 40
        ]
        if not moved:
            return "<answer>0 to 0</answer>"
        times, step = media.meta.timestamps, 1 / media.meta.fps
        return f"<answer>{times[moved[0]]:.2f} to {times[moved[-1]] + step:.2f}</answer>"


class PromptOnly:
    """Answers from the prompt alone: the middle of the stated duration."""

    label = "blind"

    def respond(self, items):
        return [
            f"<answer>{r.duration * 0.3:.2f} to {r.duration * 0.7:.2f}</answer>" for r, _ in items
        ]


def _run(benchmark, out, backend, controls=("frozen", "reversed", "shuffled", "blank")):
    settings = EvalSettings(
        benchmark=str(benchmark), out_dir=out, video=VIDEO, progress=False, controls=controls
    )
    return evaluate(settings, backend=backend)


def test_a_model_that_reads_frames_gains_and_a_blind_one_gains_exactly_zero(synth_tg, tmp_path):
    seeing = _run(synth_tg, tmp_path / "seeing", FrameReader()).metrics
    tg = Family("temporal_grounding").value
    assert seeing["families"][tg]["metrics"]["mIoU"] > 50
    for control in ("frozen", "blank"):
        gain = seeing["controls"][control]["video_gain"][tg]
        assert gain["mIoU"] > 40, (control, gain)
        assert seeing["controls"][control]["n"] == 6
    blind = _run(synth_tg, tmp_path / "blind", PromptOnly()).metrics
    for control, entry in blind["controls"].items():
        assert all(v == 0.0 for v in entry["video_gain"][tg].values()), (control, entry)
        assert entry["real"][tg] == blind["families"][tg]["metrics"]


def test_outputs_report_compare_and_resume(synth_tg, tmp_path):
    out = tmp_path / "seeing"
    outputs = _run(synth_tg, out, FrameReader(), controls=("frozen",))
    assert (out / "controls" / "frozen" / "predictions.jsonl").is_file()
    assert (out / "plots" / "controls.png").is_file()
    report = outputs.report.read_text()
    assert "## Video controls" in report and "real / frozen / gain" in report
    on_disk = json.loads(outputs.metrics_path.read_text())
    assert on_disk["controls"]["frozen"]["video_gain"]["temporal_grounding"]["mIoU"] > 40

    blind = _run(synth_tg, tmp_path / "blind", PromptOnly(), controls=("frozen",))
    rows = {(f, m): d for f, m, _, _, d in compare_paths(blind.out_dir, out).rows}
    assert rows[("temporal_grounding [gain vs frozen]", "mIoU")] > 40  # type: ignore[operator]  # both runs have the metric
    assert ("temporal_grounding [frozen]", "mIoU") in rows

    class Counting(FrameReader):
        calls = 0

        def respond(self, items):
            Counting.calls += len(items)
            return super().respond(items)

    _run(synth_tg, out, Counting(), controls=("frozen",))  # everything answered already
    assert Counting.calls == 0


def test_images_get_the_blank_control_only_and_math_none(synth_all, tmp_path):
    metrics = _run(synth_all, tmp_path / "out", AnnotationBackend()).metrics
    frozen, blank = (
        metrics["controls"]["frozen"]["families"],
        metrics["controls"]["blank"]["families"],
    )
    assert "spatial_grounding" not in frozen and "spatial_grounding" in blank
    assert "temporal_grounding" in frozen
    assert "math" not in frozen and "math" not in blank
    # the annotation backend ignores the media: every gain is 0
    for entry in metrics["controls"].values():
        for gains in entry["video_gain"].values():
            assert all(v == 0.0 for v in gains.values())


def test_controls_need_a_model_and_known_names(synth_tg, tmp_path):
    predictions = tmp_path / "p.jsonl"
    predictions.write_text('{"id": "tg-0000", "response": "x"}\n')
    settings = EvalSettings(
        benchmark=str(synth_tg), out_dir=tmp_path / "o", progress=False, controls=("frozen",)
    )
    with pytest.raises(ConfigError, match="--controls needs a model"):
        evaluate(settings, predictions=predictions)
    with pytest.raises(ConfigError, match="'upside' is unknown"):
        EvalSettings(benchmark=str(synth_tg), out_dir=tmp_path / "o", controls=("upside",))


@pytest.mark.slow
def test_eval_cli_with_controls_on_a_tiny_model(
    tiny_model_dir, synth_tg, tmp_path, capsys, monkeypatch
):
    from tests.cli_runner import run_cli

    out = tmp_path / "eval"
    result = run_cli(
        capsys,
        monkeypatch,
        "eval",
        "--model",
        tiny_model_dir("qwen2_5_vl"),
        "--benchmark",
        synth_tg,
        "--out",
        out,
        "--controls",
        "frozen,reversed",
        "--max-frames",
        "4",
        "--max-new-tokens",
        "8",
        "--device",
        "cpu",
    )
    assert result.code == 0, result.output
    assert "video controls" in result.output
    metrics = json.loads((out / "metrics.json").read_text())
    assert set(metrics["controls"]) == {"frozen", "reversed"}
    gain = metrics["controls"]["frozen"]["video_gain"]["temporal_grounding"]["mIoU"]
    assert torch.isfinite(torch.tensor(gain))


def test_controls_chart_labels_values_and_says_when_every_score_is_0():
    """controls.png was an empty frame when every score was 0, without value labels."""
    from videorl.eval.plots import controls_figure

    zero = {"R1@0.5": 0.0, "mIoU": 0.0}
    controls = {
        "frozen": {
            "real": {"temporal_grounding": zero},
            "families": {"temporal_grounding": zero},
            "video_gain": {"temporal_grounding": zero},
        }
    }
    (ax,) = controls_figure(controls).axes
    texts = [t.get_text() for t in ax.texts]
    assert "every score is 0" in texts
    assert texts.count("0.0") == 4  # two metrics, real and frozen
    seeing = {"R1@0.5": 62.5, "mIoU": 55.7}
    controls["frozen"]["real"]["temporal_grounding"] = seeing
    (ax,) = controls_figure(controls).axes
    texts = [t.get_text() for t in ax.texts]
    assert "every score is 0" not in texts and {"62.5", "55.7"} <= set(texts)
