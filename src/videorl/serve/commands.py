"""The `videorl serve` command (registered in `videorl.cli`).

Only typer is imported here; FastAPI, uvicorn, pydantic, models and torch load inside the
command, so `videorl --help` stays fast and works without the `serve` extra.
"""

from __future__ import annotations

from typing import Any

from videorl.errors import ConfigError
from videorl.eval.options import (
    Device,
    EarlyExitConfidence,
    Fps,
    MaxFrames,
    MaxPixels,
    MinPixels,
    check_early_exit,
)
from videorl.serve.options import (
    BodyTimeout,
    Host,
    MaxBatch,
    MaxBodyMb,
    MaxFramePixels,
    MaxN,
    MaxNewTokens,
    MaxQueue,
    MaxRequestFrames,
    MaxRequestPixels,
    MediaRoot,
    Port,
    ServedModel,
    ServeKey,
    ServeModel,
)


def check_serve_installed() -> None:
    """A one-line `ConfigError` with the install command when the `serve` extra (FastAPI,
    uvicorn, pydantic) is missing."""
    try:
        import fastapi  # noqa: F401
        import pydantic  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        raise ConfigError(
            "videorl serve needs fastapi, uvicorn and pydantic; install them with "
            "pip install 'videorl[serve]'"
        ) from None


def serve_command(
    model: ServeModel,
    host: Host = "127.0.0.1",
    port: Port = 8000,
    served_model: ServedModel = None,
    api_key: ServeKey = None,
    media_root: MediaRoot = None,
    max_new_tokens: MaxNewTokens = 1024,
    max_n: MaxN = 8,
    max_body_mb: MaxBodyMb = 64.0,
    max_request_frames: MaxRequestFrames = 256,
    max_frame_pixels: MaxFramePixels = 4096 * 4096,
    max_request_pixels: MaxRequestPixels = 256 * 1280 * 720,
    max_batch: MaxBatch = 8,
    max_queue: MaxQueue = 64,
    body_timeout: BodyTimeout = 30.0,
    fps: Fps = None,
    max_frames: MaxFrames = None,
    min_pixels: MinPixels = None,
    max_pixels: MaxPixels = None,
    device: Device = "auto",
    early_exit_confidence: EarlyExitConfidence = None,
) -> None:
    """Serve a checkpoint as an OpenAI/vLLM-compatible chat-completions endpoint (HF engine).

    The run's settings (its `config.yaml`, as eval reads them) apply: MP4s and media paths
    are sampled with its video settings (flags override), and its think mode and
    `data.chat_template_kwargs` are the chat template's defaults (a request's own win).
    Binds 127.0.0.1 unless --host says otherwise.
    """
    check_serve_installed()
    check_early_exit(early_exit_confidence, model=model)
    from videorl.serve.listen import bind

    bind(host, port).close()  # a busy port is a one-line error before the model loads
    from rich.console import Console

    from videorl.config.run import run_model_name
    from videorl.inference import RunSettings, load_for_inference
    from videorl.serve.app import serve
    from videorl.serve.chat import ChatService

    if media_root is not None and not media_root.is_dir():
        raise ConfigError(f"--media-root {media_root} is not a folder; pass an existing folder")
    run = RunSettings.from_checkpoint(model).override(
        fps=fps, max_frames=max_frames, min_pixels=min_pixels, max_pixels=max_pixels
    )
    limits = _serve_limits(
        max_body_mb,
        body_timeout,
        max_new_tokens,
        max_n,
        max_request_frames,
        max_frame_pixels,
        max_request_pixels,
        max_batch,
        max_queue,
    )
    console = Console()
    if run.source is not None:
        console.print(f"serve settings: {run.summary()}", highlight=False, soft_wrap=True)
    service = ChatService.for_run(
        load_for_inference(model, device),
        served_model or run_model_name(model),
        run,
        limits,
        media_root,
    )
    serve(
        service,
        host=host,
        port=port,
        api_key=api_key,
        announce=lambda line: console.print(line, highlight=False, soft_wrap=True),
        early_exit=early_exit_confidence,
    )


def _serve_limits(
    max_body_mb: float,
    body_timeout: float,
    max_new_tokens: int,
    max_n: int,
    max_request_frames: int,
    max_frame_pixels: int,
    max_request_pixels: int,
    max_batch: int,
    max_queue: int,
) -> Any:
    """The server's bounds from its flags; a bad value is a one-line error naming the flag."""
    from videorl.serve.limits import ServeLimits

    try:
        return ServeLimits(
            max_body_bytes=int(max_body_mb * 1024**2),
            body_timeout_s=body_timeout,
            max_new_tokens=max_new_tokens,
            max_n=max_n,
            max_frames=max_request_frames,
            max_frame_pixels=max_frame_pixels,
            max_request_pixels=max_request_pixels,
            max_batch=max_batch,
            max_queue=max_queue,
        )
    except ConfigError as err:
        raise ConfigError(f"{err} (videorl serve option)") from None
