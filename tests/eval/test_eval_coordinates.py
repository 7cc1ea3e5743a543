"""`videorl eval` of a model with its own box convention: the backend sees the records in
the model's coordinates, predictions carry that frame, scoring converts the ground truth to
it (issue 16). A backend answering the converted annotations scores perfectly; the same
answers scored in the source frame would not."""

from __future__ import annotations

import json

import pytest

from videorl.eval.runner import EvalSettings, evaluate

from .conftest import SMALL_VIDEO, AnnotationBackend

# segmentation records with a mask keep the source frame (the mask is in its pixels)
BOX_FAMILIES = ("spatial_grounding", "tracking", "spatio_temporal_grounding")


class NormalisedModel(AnnotationBackend):
    """A Qwen3-VL-like backend: answers in 0..1000."""

    coordinates = "norm1000"

    def __init__(self) -> None:
        super().__init__()
        self.formats: set[str] = set()

    def respond(self, items):
        self.formats |= {r.box_format for r, _ in items if r.family.value in BOX_FAMILIES}
        return super().respond(items)


@pytest.mark.parametrize("convention", ["norm1000", "abs"])
def test_answers_in_the_model_frame_score_against_the_converted_truth(
    synth_all, tmp_path, convention
):
    backend = NormalisedModel()
    backend.coordinates = convention
    settings = EvalSettings(
        benchmark=str(synth_all), out_dir=tmp_path / "eval", video=SMALL_VIDEO, progress=False
    )
    outputs = evaluate(settings, backend=backend)
    assert backend.formats == {convention}
    lines = [json.loads(x) for x in outputs.predictions.read_text().splitlines()]
    framed = {row["id"] for row in lines if row.get("frame")}
    assert framed and all(
        row["frame"]["box_format"] == convention for row in lines if row.get("frame")
    )
    families = outputs.metrics["families"]
    sg = families["spatial_grounding"]["metrics"]
    assert next(v for k, v in sg.items() if k.lower().startswith("acc")) == 100.0
    # without the frame the converted answers are scored in the source frame: worse
    stripped = tmp_path / "stripped.jsonl"
    stripped.write_text(
        "".join(json.dumps({"id": r["id"], "response": r["response"]}) + "\n" for r in lines)
    )
    rescored = evaluate(
        EvalSettings(
            benchmark=str(synth_all), out_dir=tmp_path / "re", video=SMALL_VIDEO, progress=False
        ),
        predictions=stripped,
    )
    worse = rescored.metrics["families"]["spatial_grounding"]["metrics"]
    assert next(v for k, v in worse.items() if k.lower().startswith("acc")) < 100.0


def test_eval_prompt_style_flag(tmp_path):
    from typer.testing import CliRunner

    from videorl.cli import app
    from videorl.errors import ConfigError
    from videorl.eval.commands import eval_run_settings

    def prompts(model, style):
        run = eval_run_settings(model, think=None, prompt_style=style)
        return run.prompt_style, run.chat_template_kwargs

    assert prompts(None, None) == ("videorl", {})
    assert prompts(None, "taro")[0] == "taro"
    with pytest.raises(ConfigError, match="--prompt-style='paper'"):
        prompts(None, "paper")
    run = tmp_path / "run"
    (run / "final").mkdir(parents=True)
    (run / "config.yaml").write_text(
        "data:\n  prompt_style: orarl\n  chat_template_kwargs: {enable_thinking: false}\n"
    )
    assert prompts(str(run / "final"), None) == ("orarl", {"enable_thinking": False})
    assert prompts(str(run / "final"), "video_r1")[0] == "video_r1"
    result = CliRunner().invoke(app, ["eval", "--help"])
    assert "--prompt-style" in result.output
