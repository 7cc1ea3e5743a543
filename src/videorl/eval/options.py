"""The command-line flags of `videorl eval`, as typer `Annotated` types.

One declaration per flag; the flags `videorl serve` shares (video settings, device) are
declared here once and mean the same in both (`serve.options` imports them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from videorl.errors import ConfigError

# ----- video settings and device (eval and serve) ------------------------------------------
Fps = Annotated[float | None, typer.Option("--fps", help="Frame sampling rate (video.fps).")]
MaxFrames = Annotated[
    int | None, typer.Option("--max-frames", help="Frames per video at most (video.max_frames).")
]
MinPixels = Annotated[
    int | None, typer.Option("--min-pixels", help="Pixels per frame at least (video.min_pixels).")
]
MaxPixels = Annotated[
    int | None, typer.Option("--max-pixels", help="Pixels per frame at most (video.max_pixels).")
]
Device = Annotated[str, typer.Option("--device", help="auto | cpu | cuda | cuda:N.")]

# ----- eval ---------------------------------------------------------------------------------
EvalModel = Annotated[
    str | None,
    typer.Option(
        "--model",
        help="Checkpoint folder or Hugging Face Hub id (org/name[@rev]) to run (HF engine).",
    ),
]
Benchmark = Annotated[
    str | None,
    typer.Option(
        "--benchmark",
        help="A data file (records, vtg, timer1, mcq, math, verl, easyr1 or orarl format), a "
        "folder "
        "or Hugging Face dataset id (org/name[@split], test split by default), or a benchmark "
        "name: charades_sta | activitynet_captions | qvhighlights | tvgbench.",
    ),
]
VideoRoot = Annotated[
    str | None,
    typer.Option(
        "--video-root",
        help="Folder that media paths are relative to (default: the annotation file's folder).",
    ),
]
BenchmarkRoot = Annotated[
    str | None,
    typer.Option(
        "--benchmark-root",
        help="Where named benchmarks' annotation files are "
        "(default: --video-root, else ./benchmarks).",
    ),
]
Out = Annotated[
    Path | None, typer.Option("--out", help="Output folder (default runs/eval/<benchmark>).")
]
MaxSamples = Annotated[
    int | None, typer.Option("--max-samples", help="Evaluate only the first N records.")
]
Controls = Annotated[
    str | None,
    typer.Option(
        "--controls",
        help="Answer the records again on control media and report the video gain (real "
        "minus control): comma-separated from frozen (every frame the first), reversed, "
        "shuffled (seeded), blank (constant grey; the only control for images).",
    ),
]
Predictions = Annotated[
    Path | None,
    typer.Option(
        "--predictions", help="Score this JSONL of {id, response} lines instead of running a model."
    ),
]
Compare = Annotated[
    tuple[Path, Path] | None,
    typer.Option(
        "--compare",
        help="Delta table B - A of two metrics.json / eval folders / predictions files.",
    ),
]
Endpoint = Annotated[
    str | None,
    typer.Option(
        "--endpoint",
        help="OpenAI-compatible server URL (vLLM, `videorl serve`), e.g. http://127.0.0.1:8000/v1.",
    ),
]
EvalServedModel = Annotated[
    str | None,
    typer.Option("--served-model", help="Model name at the endpoint (see its /v1/models)."),
]
EndpointCheckpoint = Annotated[
    str | None,
    typer.Option(
        "--checkpoint",
        help="With --endpoint: the checkpoint the endpoint serves; its run's settings (video, "
        "think, prompt style, template variables, coordinates) and model type apply as with "
        "--model.",
    ),
]
EndpointModelType = Annotated[
    str | None,
    typer.Option(
        "--model-type",
        help="With --endpoint: the served model's type (config.json's model_type: qwen2_5_vl, "
        "qwen3_vl, qwen3_5, ...); boxes are converted to its convention as with --model "
        "(default: that of --checkpoint; without either, each record's own).",
    ),
]
Concurrency = Annotated[
    int, typer.Option("--concurrency", help="Concurrent requests to the endpoint.")
]
EndpointKey = Annotated[
    str | None,
    typer.Option("--api-key", envvar="OPENAI_API_KEY", help="Bearer token for the endpoint."),
]
Think = Annotated[
    bool | None,
    typer.Option(
        "--think/--no-think",
        help="Ask for a <think> block before the answer (default: as the model was trained "
        "(data.think of its run), else no).",
    ),
]
PromptStyle = Annotated[
    str | None,
    typer.Option(
        "--prompt-style",
        help="Prompt templates: videorl, orarl, taro, video_r1 or videoauto_r1 (the published "
        "ones, to "
        "reproduce a paper's table; default: data.prompt_style of the model's run, else "
        "videorl).",
    ),
]
BatchSize = Annotated[
    int, typer.Option("--batch-size", help="Prompts per generate call (HF engine).")
]
ResponseBudget = Annotated[int, typer.Option("--max-new-tokens", help="Response budget in tokens.")]
EvalTools = Annotated[
    str | None,
    typer.Option(
        "--tools",
        help="With --model: answer with these tools (comma-separated registered names: "
        "get_clip, get_frame, crop), in the trainer's multi-turn loop; the records are also "
        "answered without tools, and metrics.json and report.md put the two scores side by "
        "side with the calls per answer (docs/tools.md).",
    ),
]
EvalToolModules = Annotated[
    str | None,
    typer.Option(
        "--tool-modules",
        help="With --tools: modules to import first (comma-separated, e.g. my_tools,lab.zoom; "
        "on PYTHONPATH), so that the tools they register with @register_tool exist, as "
        "rollout.tool_modules does for training.",
    ),
]
MaxTurns = Annotated[
    int,
    typer.Option("--max-turns", help="With --tools: model turns per answer at most (>= 1)."),
]
MaxTotalTokens = Annotated[
    int,
    typer.Option(
        "--max-total-tokens",
        help="With --tools: tokens per answer at most, model and tool turns together.",
    ),
]
SkipInvalid = Annotated[
    bool,
    typer.Option(
        "--skip-invalid", help="Skip and count invalid benchmark rows instead of stopping."
    ),
]
OverwriteEval = Annotated[
    bool, typer.Option("--overwrite", help="Replace the outputs of an earlier eval in --out.")
]
ResumeEval = Annotated[
    bool, typer.Option("--resume", help="Continue the predictions of an interrupted eval in --out.")
]
EarlyExitConfidence = Annotated[
    float | None,
    typer.Option(
        "--early-exit-confidence",
        help="Answer-twice models (VideoAuto-R1, data.prompt_style videoauto_r1): stop after "
        "the first boxed answer when its confidence (geometric mean of its token "
        "probabilities) is at least this, in [0, 1] (the paper: 0.97); else think and answer "
        "again. Off by default.",
    ),
]


def check_early_exit(
    confidence: float | None, *, model: str | None = None, tools: str | None = None
) -> None:
    """`--early-exit-confidence` is a probability, and needs the in-process engine (the gate
    reads each step's scores) answering in one turn."""
    if confidence is None:
        return
    if not 0.0 <= confidence <= 1.0:
        raise ConfigError(
            f"--early-exit-confidence={confidence:g} is not a probability; give a value in "
            "[0, 1] (VideoAuto-R1: 0.97)"
        )
    if model is None:
        raise ConfigError(
            "--early-exit-confidence needs --model: the in-process engine reads each step's "
            "token probabilities (an endpoint does not return them)"
        )
    if tools:
        raise ConfigError("--early-exit-confidence answers in one turn; drop --tools")
