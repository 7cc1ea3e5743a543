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


def option(kind: Any, *names: str, **settings: Any) -> Any:
    """The parameter type of a typer flag: `Annotated[kind, typer.Option(*names, **settings)]`."""
    return Annotated[kind, typer.Option(*names, **settings)]


# ----- train and sft -------------------------------------------------------------------------
TRAINING = {
    "overrides": Annotated[
        list[str] | None,
        typer.Argument(
            help="Dotted overrides, e.g. rollout.n=4 trainer.steps=3 (`videorl keys` lists them)"
        ),
    ],
    "dry_run": option(
        bool, "--dry-run", help="Print the resolved config and the step plan, then exit."
    ),
    "resume": option(
        str | None, help="auto (latest checkpoint in the output dir) or a checkpoint path."
    ),
    "nproc": option(
        int, help="Run data-parallel on this many local processes (torchrun shortcut)."
    ),
    "overwrite": option(
        bool, "--overwrite", help="Replace the run in trainer.output_dir (its files only)."
    ),
}

# ----- video settings and device (eval and serve) ------------------------------------------
VIDEO = {
    "fps": option(float | None, "--fps", help="Frame sampling rate (video.fps)."),
    "max_frames": option(
        int | None, "--max-frames", help="Frames per video at most (video.max_frames)."
    ),
    "min_pixels": option(
        int | None, "--min-pixels", help="Pixels per frame at least (video.min_pixels)."
    ),
    "max_pixels": option(
        int | None, "--max-pixels", help="Pixels per frame at most (video.max_pixels)."
    ),
    "device": option(str, "--device", help="auto | cpu | cuda | cuda:N."),
}

# ----- eval ---------------------------------------------------------------------------------
EarlyExitConfidence = Annotated[  # a type: `videorl demo` annotates its parameter with it
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
    "model": option(
        str | None,
        "--model",
        help="Checkpoint folder or Hugging Face Hub id (org/name[@rev]) to run (HF engine).",
    ),
    "benchmark": option(
        str | None,
        "--benchmark",
        help="A data file (records, vtg, timer1, mcq, math, verl, easyr1 or orarl format), a "
        "folder "
        "or Hugging Face dataset id (org/name[@split], test split by default), or a benchmark "
        "name: charades_sta | activitynet_captions | qvhighlights | tvgbench.",
    ),
    "video_root": option(
        str | None,
        "--video-root",
        help="Folder that media paths are relative to (default: the annotation file's folder).",
    ),
    "benchmark_root": option(
        str | None,
        "--benchmark-root",
        help="Where named benchmarks' annotation files are "
        "(default: --video-root, else ./benchmarks).",
    ),
    "out": option(Path | None, "--out", help="Output folder (default runs/eval/<benchmark>)."),
    "max_samples": option(int | None, "--max-samples", help="Evaluate only the first N records."),
    "controls": option(
        str | None,
        "--controls",
        help="Answer the records again on control media and report the video gain (real "
        "minus control): comma-separated from frozen (every frame the first), reversed, "
        "shuffled (seeded), blank (constant grey; the only control for images).",
    ),
    "predictions": option(
        Path | None,
        "--predictions",
        help="Score this JSONL of {id, response} lines instead of running a model.",
    ),
    "compare": option(
        tuple[Path, Path] | None,
        "--compare",
        help="Delta table B - A of two metrics.json / eval folders / predictions files.",
    ),
    "endpoint": option(
        str | None,
        "--endpoint",
        help="OpenAI-compatible server URL (vLLM, `videorl serve`), e.g. http://127.0.0.1:8000/v1.",
    ),
    "served_model": option(
        str | None, "--served-model", help="Model name at the endpoint (see its /v1/models)."
    ),
    "checkpoint": option(
        str | None,
        "--checkpoint",
        help="With --endpoint: the checkpoint the endpoint serves; its run's settings (video, "
        "think, prompt style, template variables, coordinates) and model type apply as with "
        "--model.",
    ),
    "model_type": option(
        str | None,
        "--model-type",
        help="With --endpoint: the served model's type (config.json's model_type: qwen2_5_vl, "
        "qwen3_vl, qwen3_5, ...); boxes are converted to its convention as with --model "
        "(default: that of --checkpoint; without either, each record's own).",
    ),
    "concurrency": option(int, "--concurrency", help="Concurrent requests to the endpoint."),
    "api_key": option(
        str | None, "--api-key", envvar="OPENAI_API_KEY", help="Bearer token for the endpoint."
    ),
    "think": option(
        bool | None,
        "--think/--no-think",
        help="Ask for a <think> block before the answer (default: as the model was trained "
        "(data.think of its run), else no).",
    ),
    "prompt_style": option(
        str | None,
        "--prompt-style",
        help="Prompt templates: videorl, orarl, taro, video_r1 or videoauto_r1 (the published "
        "ones, to "
        "reproduce a paper's table; default: data.prompt_style of the model's run, else "
        "videorl).",
    ),
    "tools": option(
        str | None,
        "--tools",
        help="With --model: answer with these tools (comma-separated registered names: "
        "get_clip, get_frame, crop), in the trainer's multi-turn loop; the records are also "
        "answered without tools, and metrics.json and report.md put the two scores side by "
        "side with the calls per answer (docs/tools.md).",
    ),
    "tool_modules": option(
        str | None,
        "--tool-modules",
        help="With --tools: modules to import first (comma-separated, e.g. my_tools,lab.zoom; "
        "on PYTHONPATH), so that the tools they register with @register_tool exist, as "
        "rollout.tool_modules does for training.",
    ),
    "max_turns": option(
        int, "--max-turns", help="With --tools: model turns per answer at most (>= 1)."
    ),
    "max_total_tokens": option(
        int,
        "--max-total-tokens",
        help="With --tools: tokens per answer at most, model and tool turns together.",
    ),
    "batch_size": option(int, "--batch-size", help="Prompts per generate call (HF engine)."),
    "max_new_tokens": option(int, "--max-new-tokens", help="Response budget in tokens."),
    "early_exit_confidence": EarlyExitConfidence,
    **VIDEO,
    "skip_invalid": option(
        bool, "--skip-invalid", help="Skip and count invalid benchmark rows instead of stopping."
    ),
    "overwrite": option(
        bool, "--overwrite", help="Replace the outputs of an earlier eval in --out."
    ),
    "resume": option(
        bool, "--resume", help="Continue the predictions of an interrupted eval in --out."
    ),
}

# ----- serve ----------------------------------------------------------------------------------
SERVE = {
    "model": option(
        str, "--model", help="Checkpoint folder or Hugging Face Hub id (org/name[@rev]) to serve."
    ),
    "host": option(str, "--host", help="Address to bind (127.0.0.1: this machine only)."),
    "port": option(int, "--port", help="Port (0: any free port)."),
    "served_model": option(
        str | None, "--served-model", help="Model id clients send (default: run/checkpoint name)."
    ),
    "api_key": option(
        str | None,
        "--api-key",
        envvar="VIDEORL_API_KEY",
        help="Require 'Authorization: Bearer KEY'.",
    ),
    "media_root": option(
        Path | None, "--media-root", help="Allow video_url/image_url paths inside this folder only."
    ),
    "max_new_tokens": option(
        int, "--max-new-tokens", help="Largest max_tokens a request may ask for."
    ),
    "max_n": option(int, "--max-n", help="Most choices (n) per request."),
    "max_body_mb": option(float, "--max-body-mb", help="Largest request body, MiB."),
    "max_request_frames": option(
        int, "--max-frames-per-request", help="Most per-frame images in one video_url."
    ),
    "max_frame_pixels": option(
        int, "--max-frame-pixels", help="Largest image/frame (width x height)."
    ),
    "max_request_pixels": option(
        int, "--max-request-pixels", help="Source pixels one request may decode."
    ),
    "max_batch": option(int, "--max-batch", help="Requests generated together."),
    "max_queue": option(int, "--max-queue", help="Requests in flight (more: 503)."),
    "body_timeout": option(
        float,
        "--body-timeout",
        help="Seconds a client may take to send its headers (then closed) or body (then 408).",
    ),
    **VIDEO,
    "early_exit_confidence": EarlyExitConfidence,
}
