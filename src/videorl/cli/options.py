"""The flags of the `videorl` commands, as typer `Annotated` types, and the blocks of them
that commands share: `TRAINING` (train, sft) and `VIDEO` (eval, serve).

A command is the `videorl.api` function of its job with a flag per parameter:
`@flags_of(api.evaluate, EVAL)` gives the command that function's parameters, in its order
and with its defaults, each typed by its flag here, so the two cannot drift apart.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

Command = TypeVar("Command", bound=Callable[..., Any])


def flags_of(
    template: Callable[..., Any], flags: Mapping[str, Any]
) -> Callable[[Command], Command]:
    """Give the decorated `command(**values)` the parameters of `template` (names, order,
    defaults), each annotated with its typer flag `flags[name]` (a parameter without one is
    a `KeyError` at import), as typer reads a command's signature."""

    def decorate(command: Command) -> Command:
        params = [
            param.replace(
                annotation=flags[param.name], kind=inspect.Parameter.POSITIONAL_OR_KEYWORD
            )
            for param in inspect.signature(template).parameters.values()
        ]
        command.__signature__ = inspect.Signature(params, return_annotation=None)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params} | {"return": None}
        return command

    return decorate


# ----- train and sft -------------------------------------------------------------------------
Overrides = Annotated[
    list[str] | None,
    typer.Argument(
        help="Dotted overrides, e.g. rollout.n=4 trainer.steps=3 (`videorl keys` lists them)"
    ),
]
DryRun = Annotated[
    bool, typer.Option("--dry-run", help="Print the resolved config and the step plan, then exit.")
]
Resume = Annotated[
    str | None,
    typer.Option(help="auto (latest checkpoint in the output dir) or a checkpoint path."),
]
Nproc = Annotated[
    int, typer.Option(help="Run data-parallel on this many local processes (torchrun shortcut).")
]
Overwrite = Annotated[
    bool,
    typer.Option("--overwrite", help="Replace the run in trainer.output_dir (its files only)."),
]
TRAINING = {
    "overrides": Overrides,
    "dry_run": DryRun,
    "resume": Resume,
    "nproc": Nproc,
    "overwrite": Overwrite,
}

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
VIDEO = {
    "fps": Fps,
    "max_frames": MaxFrames,
    "min_pixels": MinPixels,
    "max_pixels": MaxPixels,
    "device": Device,
}

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
EVAL = {
    "model": EvalModel,
    "benchmark": Benchmark,
    "video_root": VideoRoot,
    "benchmark_root": BenchmarkRoot,
    "out": Out,
    "max_samples": MaxSamples,
    "controls": Controls,
    "predictions": Predictions,
    "compare": Compare,
    "endpoint": Endpoint,
    "served_model": EvalServedModel,
    "checkpoint": EndpointCheckpoint,
    "model_type": EndpointModelType,
    "concurrency": Concurrency,
    "api_key": EndpointKey,
    "think": Think,
    "prompt_style": PromptStyle,
    "tools": EvalTools,
    "tool_modules": EvalToolModules,
    "max_turns": MaxTurns,
    "max_total_tokens": MaxTotalTokens,
    "batch_size": BatchSize,
    "max_new_tokens": ResponseBudget,
    "early_exit_confidence": EarlyExitConfidence,
    **VIDEO,
    "skip_invalid": SkipInvalid,
    "overwrite": OverwriteEval,
    "resume": ResumeEval,
}

# ----- serve ----------------------------------------------------------------------------------
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
SERVE = {
    "model": ServeModel,
    "host": Host,
    "port": Port,
    "served_model": ServedModel,
    "api_key": ServeKey,
    "media_root": MediaRoot,
    "max_new_tokens": MaxNewTokens,
    "max_n": MaxN,
    "max_body_mb": MaxBodyMb,
    "max_request_frames": MaxRequestFrames,
    "max_frame_pixels": MaxFramePixels,
    "max_request_pixels": MaxRequestPixels,
    "max_batch": MaxBatch,
    "max_queue": MaxQueue,
    "body_timeout": BodyTimeout,
    **VIDEO,
    "early_exit_confidence": EarlyExitConfidence,
}
