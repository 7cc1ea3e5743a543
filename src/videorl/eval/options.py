"""The command-line flags of `videorl eval` and `videorl serve`, as typer `Annotated` types.

One declaration per flag; a flag both commands take (video settings, device) is declared
once and means the same in both.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

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
        help="A data file (records/vtg/timer1/mcq/math/verl/easyr1/orarl format), a folder "
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
        help="Prompt templates: videorl, orarl or taro (the published ones, to reproduce a "
        "paper's table; default: data.prompt_style of the model's run, else videorl).",
    ),
]
BatchSize = Annotated[
    int, typer.Option("--batch-size", help="Prompts per generate call (HF engine).")
]
ResponseBudget = Annotated[int, typer.Option("--max-new-tokens", help="Response budget in tokens.")]
OverwriteEval = Annotated[
    bool, typer.Option("--overwrite", help="Replace the outputs of an earlier eval in --out.")
]
ResumeEval = Annotated[
    bool, typer.Option("--resume", help="Continue the predictions of an interrupted eval in --out.")
]

# ----- serve --------------------------------------------------------------------------------
ServeModel = Annotated[
    str,
    typer.Option(
        "--model", help="Checkpoint folder or Hugging Face Hub id (org/name[@rev]) to serve."
    ),
]
Host = Annotated[
    str, typer.Option("--host", help="Address to bind (127.0.0.1: this machine only).")
]
Port = Annotated[int, typer.Option("--port", help="Port (0: any free port).")]
ServedModel = Annotated[
    str | None,
    typer.Option("--served-model", help="Model id clients send (default: run/checkpoint name)."),
]
ServeKey = Annotated[
    str | None,
    typer.Option(
        "--api-key", envvar="VIDEORL_API_KEY", help="Require 'Authorization: Bearer KEY'."
    ),
]
MediaRoot = Annotated[
    Path | None,
    typer.Option("--media-root", help="Allow video_url/image_url paths inside this folder only."),
]
MaxNewTokens = Annotated[
    int, typer.Option("--max-new-tokens", help="Largest max_tokens a request may ask for.")
]
MaxN = Annotated[int, typer.Option("--max-n", help="Most choices (n) per request.")]
MaxBodyMb = Annotated[float, typer.Option("--max-body-mb", help="Largest request body, MiB.")]
MaxRequestFrames = Annotated[
    int, typer.Option("--max-frames-per-request", help="Most per-frame images in one video_url.")
]
MaxFramePixels = Annotated[
    int, typer.Option("--max-frame-pixels", help="Largest image/frame (width x height).")
]
MaxRequestPixels = Annotated[
    int, typer.Option("--max-request-pixels", help="Source pixels one request may decode.")
]
MaxBatch = Annotated[int, typer.Option("--max-batch", help="Requests generated together.")]
MaxQueue = Annotated[int, typer.Option("--max-queue", help="Requests in flight (more: 503).")]
BodyTimeout = Annotated[
    float,
    typer.Option(
        "--body-timeout",
        help="Seconds a client may take to send its headers (then closed) or body (then 408).",
    ),
]
