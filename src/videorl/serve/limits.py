"""`ServeLimits`: every size `videorl serve` bounds, checked before the work it bounds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from videorl.config.constraints import Checked, Constraint, Gt

_Positive = Gt(0)


@dataclass(frozen=True)
class ServeLimits(Checked):
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

    max_body_bytes: Annotated[int, _Positive] = 64 * 1024**2
    body_timeout_s: Annotated[float, _Positive] = 30.0
    max_new_tokens: Annotated[int, _Positive] = 1024
    max_n: Annotated[int, _Positive] = 8
    max_frames: Annotated[int, _Positive] = 256
    max_frame_pixels: Annotated[int, _Positive] = 4096 * 4096
    max_request_pixels: Annotated[int, _Positive] = 256 * 1280 * 720
    max_batch: Annotated[int, _Positive] = 8
    max_queue: Annotated[int, _Positive] = 64
    max_connections: Annotated[int, _Positive] = 128

    @classmethod
    def refusal(cls, key: str, value: Any, constraint: Constraint) -> str:
        return f"serve limit {key}={value!r} is invalid: it must be {constraint.rule()}"
