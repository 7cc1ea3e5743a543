"""The command-line flags of `videorl serve`, as typer `Annotated` types.

The flags it shares with `videorl eval` (video settings, device) are declared once, in
`eval.options`, and mean the same in both; `serve.commands` takes them from there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

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
