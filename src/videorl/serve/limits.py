"""`ServeLimits`: every size `videorl serve` bounds, checked before the work it bounds."""

from __future__ import annotations

from dataclasses import dataclass, fields

from videorl.errors import ConfigError


@dataclass(frozen=True)
class ServeLimits:
    """Bounds on one request and on the server.

    - `max_body_bytes`: request body (checked on `Content-Length`, then while reading).
    - `body_timeout_s`: seconds a client may take to send its body (then HTTP 408), and its
      request headers (then the connection is closed).
    - `max_new_tokens`: largest `max_tokens` accepted (larger ones get HTTP 400).
    - `max_n`: most choices per request.
    - `max_frames`: most per-frame images in one `video_url`.
    - `max_frame_pixels`: largest image or video frame, `width * height`, read from the
      header before decoding.
    - `max_request_pixels`: source pixels a request may decode in all, `frames * w * h`.
    - `max_batch`: requests with equal sampling settings generated together.
    - `max_queue`: requests admitted at once (decoding, queued or generating); more get 503.
    - `max_connections`: open connections (uvicorn `limit_concurrency`; more get 503).
    """

    max_body_bytes: int = 64 * 1024**2
    body_timeout_s: float = 30.0
    max_new_tokens: int = 1024
    max_n: int = 8
    max_frames: int = 256
    max_frame_pixels: int = 4096 * 4096
    max_request_pixels: int = 256 * 1280 * 720
    max_batch: int = 8
    max_queue: int = 64
    max_connections: int = 128

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            if not value > 0:
                raise ConfigError(
                    f"serve limit {field.name}={value!r} is invalid: it must be positive"
                )
