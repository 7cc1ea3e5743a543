"""What a demo client may make the server read, how much, and who may connect.

- `client_video`: a path a client passes is resolved (symlinks and `..` included) and must be
  a regular file inside one of the demo's own folders (its uploads and its examples) and no
  larger than the upload limit; anything else gets the same `REFUSED` message, whether or
  not the path exists, so a client learns nothing about the server's files.
- `DemoLimits.check`: generation and decoding values from the client are bounded server-side
  (the sliders' ranges are only a browser-side hint).
- `parse_auth`: `--share` (a public gradio.live link) needs `--auth USER:PASS`.
- `PlainForbidden`: a 403 answer says `File not allowed.` and nothing more (gradio's own
  names the absolute path asked for, e.g. the demo's temporary folder).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar

from videorl.config.constraints import Checked, Constraint, Ge, Gt
from videorl.errors import ConfigError

REFUSED = (
    "**Cannot answer:** this video is not one of the demo's uploads or examples; "
    "upload it (again) or pick an example."
)


@dataclass(frozen=True)
class DemoLimits(Checked):
    """Server-side bounds on what one question may cost."""

    max_upload_mb: Annotated[float, Gt(0)] = 500.0
    max_frames: Annotated[int, Ge(2)] = 512
    max_fps: Annotated[float, Gt(0)] = 10.0
    max_new_tokens: Annotated[int, Ge(1)] = 4096

    FLAGS: ClassVar[tuple[str, ...]] = ("max_upload_mb", "max_frames")  # `videorl demo` options

    @classmethod
    def refusal(cls, key: str, value: Any, constraint: Constraint) -> str:
        """`--max-frames=1 must be >= 2` for a flag, `demo limit max_fps=0 ...` otherwise."""
        name = f"--{key.replace('_', '-')}" if key in cls.FLAGS else f"demo limit {key}"
        return f"{name}={value!r} must be {constraint.rule()}"

    @property
    def max_upload_bytes(self) -> int:
        return int(self.max_upload_mb * 2**20)

    def check(self, *, fps: float, max_frames: int, max_new_tokens: int) -> str | None:
        """The message to show for a value out of range, or None."""
        for name, value, low, high in (
            ("frames per second", fps, 0.01, self.max_fps),
            ("max frames", max_frames, 2, self.max_frames),
            ("max new tokens", max_new_tokens, 1, self.max_new_tokens),
        ):
            if not low <= value <= high:
                return f"**Cannot answer:** {name}={value} is outside [{low}, {high}]."
        return None


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def client_video(
    path: str | os.PathLike | None, roots: Sequence[Path], limits: DemoLimits
) -> str | None:
    """The resolved path of a client's video if the demo may read it, else None."""
    if not path:
        return None
    try:
        resolved = Path(os.path.realpath(path))
        allowed = [Path(os.path.realpath(root)) for root in roots]
        if not any(_inside(resolved, root) for root in allowed):
            return None
        if not resolved.is_file() or resolved.stat().st_size > limits.max_upload_bytes:
            return None
    except (OSError, ValueError):  # e.g. a NUL byte or a path too long
        return None
    return str(resolved)


def parse_auth(auth: str | None, share: bool) -> tuple[str, str] | None:
    """`USER:PASS` -> (user, password); a public `--share` link without it is refused."""
    if auth is None:
        if share:
            raise ConfigError(
                "--share publishes the demo on a public gradio.live link; add --auth USER:PASS "
                "so that only you can use it"
            )
        return None
    user, sep, password = auth.partition(":")
    if not sep or not user or not password:
        raise ConfigError("--auth must look like USER:PASS (both non-empty)")
    return user, password


class PlainForbidden:
    """ASGI middleware: the body of every 403 response becomes `FORBIDDEN_BODY`, so a client
    refused a file does not learn the server's folders from the refusal."""

    FORBIDDEN_BODY = b'{"detail":"File not allowed."}'

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        forbidden = False

        async def plain(message: dict[str, Any]) -> None:
            nonlocal forbidden
            if message["type"] == "http.response.start" and message["status"] == 403:
                forbidden = True
                kept = [
                    (k, v)
                    for k, v in message.get("headers", [])
                    if k.lower() not in (b"content-length", b"content-type")
                ]
                length = str(len(self.FORBIDDEN_BODY)).encode()
                headers = [
                    *kept,
                    (b"content-type", b"application/json"),
                    (b"content-length", length),
                ]
                message = {**message, "headers": headers}
            elif message["type"] == "http.response.body" and forbidden:
                if message.get("more_body"):
                    return  # the original body's chunks are dropped
                message = {"type": "http.response.body", "body": self.FORBIDDEN_BODY}
            await send(message)

        await self.app(scope, receive, plain)
