"""The checks of `videorl serve` (`videorl.api.serve`) before its server starts.

Nothing heavy is imported here; FastAPI, uvicorn, pydantic, models and torch load inside
`api.serve`, so `videorl --help` stays fast and works without the `serve` extra.
"""

from __future__ import annotations

from typing import Any

from videorl.errors import ConfigError


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


def serve_limits(
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
