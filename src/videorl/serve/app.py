"""`videorl serve`: an OpenAI/vLLM-compatible chat-completions server (FastAPI + uvicorn).

Routes: `GET /health`, `GET /v1/models`, `POST /v1/chat/completions` (JSON, or server-sent
events with `stream: true`). Each request is checked in this order, cheapest first, and
refused with a 4xx and a one-line OpenAI-style error (`{"error": {"message", "type",
"param", "code"}}`): API key (401), admission (503 when `max_queue` requests are in
flight), `Content-Length` and body size (413), body arrival within `body_timeout_s` (408),
JSON and field validation (400, `serve.schema`), model name and sampling limits (400),
media sizes from headers before decoding (413, `serve.media`). Media decoding and prompt
encoding run in `DECODE_THREADS` worker threads, generation on the `GenerationQueue`
thread, stream chunks are built in a thread: the event loop only awaits. Binds 127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from typing import Any, Self

import anyio
import anyio.to_thread
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.exceptions import HTTPException

from videorl.serve.chat import ChatService
from videorl.serve.engine import GenerationQueue
from videorl.serve.listen import bind
from videorl.serve.schema import RequestError, parse_request

logger = logging.getLogger(__name__)

LOOPBACK = ("127.0.0.1", "::1", "localhost")
DECODE_THREADS = 2  # requests decoding media at once (each holds up to max_request_pixels)


def _error(status: int, message: str, param: str | None = None) -> JSONResponse:
    kind = {401: "authentication_error", 404: "not_found_error", 503: "overloaded"}.get(
        status, "invalid_request_error" if status < 500 else "server_error"
    )
    payload = {"message": message, "type": kind, "param": param, "code": status}
    return JSONResponse({"error": payload}, status_code=status)


async def read_body(request: Request, max_bytes: int, timeout_s: float) -> bytes:
    """The body, refused when announced or found over `max_bytes`, or not sent in time."""
    announced = request.headers.get("content-length")
    if announced is not None and (not announced.isdigit() or int(announced) > max_bytes):
        raise RequestError(
            f"Content-Length {announced[:30]!r} is not a size up to {max_bytes} bytes "
            "(--max-body-mb)",
            status=413 if announced.isdigit() else 400,
        )

    async def receive() -> bytes:
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > max_bytes:
                raise RequestError(f"the body is over {max_bytes} bytes (--max-body-mb)", 413)
        return bytes(body)

    try:
        return await asyncio.wait_for(receive(), timeout_s)
    except TimeoutError:
        raise RequestError(
            f"the body did not arrive within {timeout_s:g} s; send it at once", status=408
        ) from None


class _Admission:
    """Counts requests in flight; refuses past `limit` (HTTP 503)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.active = 0

    @contextmanager
    def slot(self) -> Iterator[None]:
        if self.active >= self.limit:
            raise RequestError(
                f"the server has {self.active} requests in flight (--max-queue); retry later",
                status=503,
            )
        self.active += 1
        try:
            yield
        finally:
            self.active -= 1


def _sse(chunks: list[dict[str, Any]]) -> AsyncIterator[bytes]:
    async def stream() -> AsyncIterator[bytes]:
        for chunk in chunks:
            yield f"data: {json.dumps(chunk)}\n\n".encode()
        yield b"data: [DONE]\n\n"

    return stream()


def create_app(chat: ChatService, queue: GenerationQueue, api_key: str | None = None) -> FastAPI:
    """The FastAPI app serving `chat` (generation on `queue`)."""
    app = FastAPI(title="videorl serve", docs_url=None, redoc_url=None, openapi_url=None)
    limits = chat.policy.limits
    admission = _Admission(limits.max_queue)
    decoders = anyio.CapacityLimiter(DECODE_THREADS)  # bounds the memory of decoded media

    def authorize(request: Request) -> None:
        if api_key is None:
            return
        given = request.headers.get("authorization", "")
        if not hmac.compare_digest(given.encode(), f"Bearer {api_key}".encode()):
            raise RequestError("missing or wrong API key; send 'Authorization: Bearer KEY'", 401)

    @app.exception_handler(RequestError)
    async def refused(_: Request, err: RequestError) -> JSONResponse:
        return _error(err.status, str(err), err.param)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, err: HTTPException) -> JSONResponse:
        return _error(
            err.status_code,
            f"no route {request.method} {request.url.path}; use GET /v1/models or "
            "POST /v1/chat/completions",
        )

    @app.exception_handler(Exception)
    async def crashed(_: Request, err: Exception) -> JSONResponse:
        logger.error("request failed", exc_info=err)
        return _error(500, "internal error while answering; see the server log")

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/v1/models")
    async def models(request: Request) -> dict[str, Any]:
        authorize(request)
        return chat.models()

    @app.post("/v1/chat/completions")
    async def completions(request: Request) -> Any:
        authorize(request)
        with admission.slot():
            body = await read_body(request, limits.max_body_bytes, limits.body_timeout_s)
            parsed = parse_request(body)
            chat.check_model(parsed)
            chat.sampling(parsed)  # refuse bad limits before decoding anything
            prompt = await anyio.to_thread.run_sync(chat.prompt, parsed, limiter=decoders)
            future = queue.submit(prompt.encoding, prompt.params, prompt.seed)
            generation = await asyncio.wrap_future(future)
        if parsed.stream:
            include = bool(parsed.stream_options and parsed.stream_options.include_usage)
            chunks = await anyio.to_thread.run_sync(
                lambda: list(chat.chunks(prompt, generation, include))
            )
            return StreamingResponse(_sse(chunks), media_type="text/event-stream")
        return chat.completion(prompt, generation)

    return app


class ServerThread:
    """Run the app with uvicorn on a thread (tests, notebooks); `url` is its `/v1` base."""

    def __init__(self, app: FastAPI, host: str = "127.0.0.1", port: int = 0, **config: Any):
        import uvicorn

        self.socket = bind(host, port)
        self.server = uvicorn.Server(uvicorn_config(app, host, **config))
        self.thread = threading.Thread(target=self.server.run, args=([self.socket],), daemon=True)
        host_, port_ = self.socket.getsockname()[:2]
        self.url = f"http://{host_}:{port_}/v1"

    def __enter__(self) -> Self:
        self.thread.start()
        while not self.server.started and self.thread.is_alive():
            threading.Event().wait(0.02)
        return self

    def __exit__(self, *_: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)


def uvicorn_config(
    app: FastAPI, host: str, max_connections: int = 128, header_timeout_s: float = 30.0
) -> Any:
    """uvicorn settings: h11 with a header deadline, bounded connections, short keep-alive,
    quiet access log."""
    import uvicorn

    from videorl.serve.protocol import header_deadline_protocol

    return uvicorn.Config(
        app,
        host=host,
        http=header_deadline_protocol(header_timeout_s),
        limit_concurrency=max_connections,
        timeout_keep_alive=5,
        h11_max_incomplete_event_size=64 * 1024,
        log_level="warning",
        access_log=False,
    )


def exposure_warning(host: str, api_key: str | None) -> str | None:
    """A warning line when the server is reachable beyond this machine without a key."""
    if host in LOOPBACK or api_key:
        return None
    return (
        f"warning: bound to {host} without --api-key: anyone who can reach this address can "
        "use the model; add --api-key KEY or bind 127.0.0.1"
    )


def serve(
    chat: ChatService,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    api_key: str | None = None,
    announce: Callable[[str], None] = logger.info,
    early_exit: float | None = None,
) -> None:
    """Serve `chat` (a loaded checkpoint behind the API) until interrupted; `announce` gets
    the status lines; `early_exit` gates answer-twice responses (`GenerationQueue`)."""
    limits = chat.policy.limits
    queue = GenerationQueue(chat.loaded, max_batch=limits.max_batch, early_exit=early_exit)
    app = create_app(chat, queue, api_key)
    handle = ServerThread(
        app,
        host,
        port,
        max_connections=limits.max_connections,
        header_timeout_s=limits.body_timeout_s,
    )
    name = chat.served_model
    if (warning := exposure_warning(host, api_key)) is not None:
        announce(warning)
    announce(f"serving {name!r} on {handle.url} (Ctrl-C stops)")
    try:
        handle.server.run([handle.socket])
    except KeyboardInterrupt:
        pass
    finally:
        queue.close()
