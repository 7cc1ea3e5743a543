"""`videorl serve`: a small OpenAI-compatible chat-completions server for a checkpoint.

Routes: `GET /v1/models`, `GET /health`, `POST /v1/chat/completions`. The request is the
one `openai_backend.chat_request` builds (and vLLM accepts): the system message and the
last user message are used (earlier turns are ignored); its content holds text parts, at
most one `video_url` part with per-frame base64 JPEGs (`data:video/jpeg;base64,<f1>,...`)
or one `image_url` part (`data:image/...;base64,...`). Frame timing comes from the
request's `video_metadata[0]` (`fps`, `timestamps`, `frame_indices`, `source_fps`,
`duration`), else `mm_processor_kwargs.fps`, else 2 fps; the processor is given it exactly
as for in-process generation (`models.inputs.encode_prompt`), so temporal positions match.

Generation uses the HF engine (`models.generate`), one request at a time (a lock), with the
request's `max_tokens` (capped by `--max-new-tokens`) and `temperature` (0 = greedy, the
OpenAI default 1.0 when absent), `top_p`. Standard library HTTP server; bind 127.0.0.1 by
default (no authentication).
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import logging
import threading
import time
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import torch

from videorl.errors import ConfigError
from videorl.models.generate import SamplingParams
from videorl.video.decode import DecodedVideo
from videorl.video.meta import VideoMeta

logger = logging.getLogger(__name__)

DEFAULT_FPS = 2.0
MAX_BODY_BYTES = 512 * 1024**2


class RequestError(ValueError):
    """A malformed request (answered with HTTP 400 and this message)."""


def _decode_images(url: str, kind: str) -> list[torch.Tensor]:
    """Frames (uint8 `C x H x W`) of a base64 data URL holding one image or comma-separated
    JPEG/PNG images."""
    from PIL import Image, UnidentifiedImageError

    head, sep, data = url.partition(",")
    if not (url.startswith("data:") and sep and head.endswith(";base64")):
        raise RequestError(
            f"{kind}.url must be a base64 data URL (data:video/jpeg;base64,<f1>,<f2>,... or "
            f"data:image/jpeg;base64,...); got {url[:60]!r}"
        )
    frames = []
    for number, chunk in enumerate(data.split(","), start=1):
        try:
            with Image.open(io.BytesIO(base64.b64decode(chunk, validate=True))) as image:
                pixels = np.asarray(image.convert("RGB"))
            frames.append(torch.from_numpy(pixels.copy()).permute(2, 0, 1))
        except (binascii.Error, UnidentifiedImageError, OSError, ValueError) as err:
            raise RequestError(
                f"{kind}: frame {number} is not a base64 JPEG/PNG image ({err})"
            ) from None
    if len({tuple(f.shape) for f in frames}) > 1:
        raise RequestError(f"{kind}: frames differ in size; send frames of one size")
    return frames


def video_from_part(url: str, metadata: dict[str, Any], fallback_fps: float | None) -> DecodedVideo:
    """Frames and `VideoMeta` from a `video_url` data URL and its metadata."""
    frames = torch.stack(_decode_images(url, "video_url"))
    count = int(frames.shape[0])
    fps = float(metadata.get("fps") or fallback_fps or DEFAULT_FPS)
    timestamps = tuple(
        float(t) for t in metadata.get("timestamps") or [i / fps for i in range(count)]
    )
    source_fps = float(metadata.get("source_fps") or fps)
    indices = tuple(
        int(i) for i in metadata.get("frame_indices") or [round(t * source_fps) for t in timestamps]
    )
    if len(timestamps) != count or len(indices) != count:
        raise RequestError(
            f"video_metadata has {len(timestamps)} timestamps and {len(indices)} frame indices for "
            f"{count} frames; send one per frame"
        )
    meta = VideoMeta(
        source_fps=source_fps,
        duration=float(metadata.get("duration") or count / fps),
        frame_indices=indices,
        timestamps=timestamps,
        fps=fps,
        width=int(frames.shape[3]),
        height=int(frames.shape[2]),
        source_width=int(frames.shape[3]),
        source_height=int(frames.shape[2]),
    )
    return DecodedVideo(frames=frames, meta=meta)


def image_from_part(url: str) -> DecodedVideo:
    """A one-frame `DecodedVideo` (an image) from an `image_url` data URL."""
    frames = _decode_images(url, "image_url")
    if len(frames) != 1:
        raise RequestError(f"image_url holds {len(frames)} images; send one")
    height, width = int(frames[0].shape[1]), int(frames[0].shape[2])
    meta = VideoMeta(
        source_fps=0.0,
        duration=0.0,
        frame_indices=(0,),
        timestamps=(0.0,),
        fps=0.0,
        width=width,
        height=height,
        source_width=width,
        source_height=height,
    )
    return DecodedVideo(frames=frames[0][None], meta=meta)


def parse_messages(
    body: dict[str, Any],
) -> tuple[str, str | None, DecodedVideo | None, DecodedVideo | None]:
    """(user text, system text, video, image) of a chat-completions request."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise RequestError("'messages' must be a non-empty list")
    system = next(
        (m.get("content") for m in messages if isinstance(m, dict) and m.get("role") == "system"),
        None,
    )
    users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    if not users:
        raise RequestError("'messages' has no user message")
    content = users[-1].get("content")
    if isinstance(content, str):
        return content, system, None, None
    if not isinstance(content, list):
        raise RequestError("a user message's 'content' must be a string or a list of parts")
    texts: list[str] = []
    video = image = None
    metadata = body.get("video_metadata") or [{}]
    fallback_fps = (body.get("mm_processor_kwargs") or {}).get("fps")
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            texts.append(str(part.get("text", "")))
        elif kind == "video_url" and video is None:
            video = video_from_part(
                str((part.get("video_url") or {}).get("url", "")), metadata[0], fallback_fps
            )
        elif kind == "image_url" and image is None:
            image = image_from_part(str((part.get("image_url") or {}).get("url", "")))
        else:
            raise RequestError(
                f"unsupported content part {kind!r}: use text, one video_url or one image_url"
            )
    if video is not None and image is not None:
        raise RequestError("send a video_url or an image_url, not both")
    return "\n".join(texts), system, video, image


def request_template_kwargs(body: dict[str, Any]) -> dict[str, Any]:
    """The request's `chat_template_kwargs` (as vLLM takes them: `enable_thinking` and other
    scalar template variables), checked; a bad value is a 400."""
    from videorl.models.chat_template import check_template_kwargs

    try:
        return check_template_kwargs(body.get("chat_template_kwargs"), "chat_template_kwargs")
    except ConfigError as err:
        raise RequestError(str(err)) from None


def run_template_kwargs(model_path: str) -> dict[str, Any]:
    """`enable_thinking` (from `data.think`) and `data.chat_template_kwargs` of the training
    run that wrote `model_path` (its `config.yaml`), else none."""
    from videorl.config import find_run_config, load_config
    from videorl.models.chat_template import template_kwargs

    run = find_run_config(model_path)
    if run is None:
        return {}
    data = load_config(run).data
    return template_kwargs(data.think, data.chat_template_kwargs)


class ChatModel:
    """A loaded checkpoint answering chat-completions requests, one at a time."""

    def __init__(self, loaded: Any, served_model: str, max_new_tokens: int = 1024) -> None:
        self.loaded = loaded
        self.served_model = served_model
        self.max_new_tokens = max_new_tokens
        # chat-template variables of the checkpoint's training run (`run_template_kwargs`);
        # a request's own `chat_template_kwargs` win
        self.template_defaults: dict[str, Any] = {}
        self._lock = threading.Lock()

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        """The chat-completions answer for a request body."""
        from videorl.models.generate import generate
        from videorl.models.inputs import encode_prompt

        text, system, video, image = parse_messages(body)
        params = self.sampling(body)
        kwargs = {**self.template_defaults, **request_template_kwargs(body)}
        with self._lock:
            prompt = encode_prompt(
                self.loaded, text, video=video, image=image, system=system, template_kwargs=kwargs
            )
            generation = generate(self.loaded, [prompt], params)[0]
        tokens = generation.token_ids[0]
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.served_model,
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": self.loaded.tokenizer.decode(tokens, skip_special_tokens=True),
                    },
                    "finish_reason": "length" if generation.truncated[0] else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt.length,
                "completion_tokens": int(tokens.numel()),
                "total_tokens": prompt.length + int(tokens.numel()),
            },
        }

    def sampling(self, body: dict[str, Any]) -> SamplingParams:
        """`SamplingParams` from the request: `max_tokens` (capped by the server's limit),
        `temperature` and `top_p` (OpenAI defaults 1 and 1)."""

        def number(key: str, default: float) -> float:
            value = body.get(key)
            try:
                return default if value is None else float(value)
            except (TypeError, ValueError):
                raise RequestError(f"{key!r} must be a number, got {value!r}") from None

        key = "max_completion_tokens" if body.get("max_tokens") is None else "max_tokens"
        max_tokens = int(number(key, self.max_new_tokens))
        return SamplingParams(
            n=1,
            max_new_tokens=max(1, min(max_tokens, self.max_new_tokens)),
            temperature=number("temperature", 1.0),
            top_p=number("top_p", 1.0),
        )

    def models(self) -> dict[str, Any]:
        return {
            "object": "list",
            "data": [{"id": self.served_model, "object": "model", "owned_by": "videorl"}],
        }


def _handler(chat: ChatModel) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _error(self, status: int, message: str, kind: str) -> None:
            self._send(status, {"error": {"message": message, "type": kind, "code": status}})

        def do_GET(self) -> None:
            if self.path.rstrip("/") in ("/v1/models", "/models"):
                self._send(200, chat.models())
            elif self.path.rstrip("/") == "/health":
                self._send(200, {"status": "ok"})
            else:
                self._error(
                    404, f"no route GET {self.path}; use /v1/models or /health", "not_found"
                )

        def do_POST(self) -> None:
            if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
                self._error(
                    404, f"no route POST {self.path}; use /v1/chat/completions", "not_found"
                )
                return
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY_BYTES:
                self._error(
                    413,
                    f"request of {length} bytes exceeds {MAX_BODY_BYTES}",
                    "invalid_request_error",
                )
                return
            try:
                body = json.loads(self.rfile.read(length) or b"null")
                if not isinstance(body, dict):
                    raise RequestError("the request body must be a JSON object")
                self._send(200, chat.complete(body))
            except (RequestError, json.JSONDecodeError) as err:
                self._error(400, str(err), "invalid_request_error")
            except Exception as err:  # one bad request must not stop the server
                logger.exception("chat completion failed")
                self._error(500, f"{type(err).__name__}: {err}", "server_error")

        def log_message(self, format: str, *args: Any) -> None:
            logger.info("%s - %s", self.address_string(), format % args)

    return Handler


def make_server(chat: ChatModel, host: str = "127.0.0.1", port: int = 8000) -> ThreadingHTTPServer:
    """A threading HTTP server for `chat` (port 0 picks a free port: see `server_address`)."""
    server = ThreadingHTTPServer((host, port), _handler(chat))
    server.daemon_threads = True
    return server


def serve(
    model_path: str,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    served_model: str | None = None,
    device: str = "auto",
    max_new_tokens: int = 1024,
    announce: Callable[[str], None] = logger.info,
) -> None:
    """Load the checkpoint and serve it until interrupted; `announce` gets the address line."""
    from pathlib import Path

    from videorl.eval.backends import HFBackend

    loaded = HFBackend.from_path(model_path, device=device).loaded
    name = served_model or Path(model_path).resolve().name
    chat = ChatModel(loaded, name, max_new_tokens)
    chat.template_defaults = run_template_kwargs(model_path)
    server = make_server(chat, host, port)
    bound_host, bound_port = server.server_address[:2]
    announce(
        f"serving {model_path} as {name!r} on http://{bound_host}:{bound_port}/v1 (Ctrl-C stops)"
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
