"""Hostile requests to `videorl serve` (loopback): each gets a 4xx and a one-line message,
never a 500, a hang or a silently changed value; the server keeps answering."""

from __future__ import annotations

import base64
import http.client
import json
import socket
import struct
import time
import zlib
from urllib.parse import urlsplit

import pytest

TEXT = [{"role": "user", "content": "hi"}]


def post(server, body, headers=None, timeout=30.0):
    """(status, error message) of a POST to /v1/chat/completions; `body` bytes or JSON."""
    address = urlsplit(server.url)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=timeout)
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    connection.request(
        "POST",
        "/v1/chat/completions",
        body=data,
        headers={"Content-Type": "application/json", **(headers or {})},
    )
    answer = connection.getresponse()
    payload = json.loads(answer.read())
    connection.close()
    return answer.status, payload.get("error", {}).get("message", "")


def raw(server, request: bytes, timeout=10.0) -> tuple[bytes, float]:
    """The first bytes a raw request gets back and the seconds they took."""
    address = urlsplit(server.url)
    started = time.monotonic()
    with socket.create_connection((address.hostname, address.port), timeout=timeout) as sock:
        sock.sendall(request)
        data = sock.recv(4096)
    return data, time.monotonic() - started


def png_header(width: int, height: int) -> bytes:
    """A valid PNG header (IHDR + one empty IDAT) announcing `width x height` pixels."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", b"") + chunk(b"IEND", b"")


def with_part(part):
    return {"model": "tiny", "messages": [{"role": "user", "content": [part]}]}


def video(url):
    return with_part({"type": "video_url", "video_url": {"url": url}})


BIG_PNG = base64.b64encode(png_header(10000, 10000)).decode()

HOSTILE = {
    "top_p=-1": ({"model": "tiny", "messages": TEXT, "top_p": -1}, 400, "top_p"),
    "temperature<0": ({"model": "tiny", "messages": TEXT, "temperature": -0.5}, 400, "temperature"),
    "max_tokens=-5": ({"model": "tiny", "messages": TEXT, "max_tokens": -5}, 400, "max_tokens"),
    "max_tokens=1e400": (b'{"model": "tiny", "messages": [], "max_tokens": 1e400}', 400, "1e400"),
    "max_tokens=NaN": (b'{"model": "tiny", "messages": [], "max_tokens": NaN}', 400, "NaN"),
    "max_tokens=2.5": ({"model": "tiny", "messages": TEXT, "max_tokens": 2.5}, 400, "max_tokens"),
    "n=1e6": ({"model": "tiny", "messages": TEXT, "n": 1e6}, 400, "n"),
    "n=10**6": ({"model": "tiny", "messages": TEXT, "n": 10**6}, 400, "n=1000000"),
    "n=true": ({"model": "tiny", "messages": TEXT, "n": True}, 400, "n"),
    "video_metadata=5": ({"model": "tiny", "messages": TEXT, "video_metadata": 5}, 400, "video"),
    "fps string": (
        {"model": "tiny", "messages": TEXT, "video_metadata": [{"fps": "2"}]},
        400,
        "video_metadata[0].fps",
    ),
    "kwargs fps string": (
        {"model": "tiny", "messages": TEXT, "mm_processor_kwargs": {"fps": "2"}},
        400,
        "mm_processor_kwargs.fps",
    ),
    "mm_processor_kwargs list": (
        {"model": "tiny", "messages": TEXT, "mm_processor_kwargs": [1]},
        400,
        "mm_processor_kwargs",
    ),
    "video_url string": (
        with_part({"type": "video_url", "video_url": "data:video/mp4;base64,AAAA"}),
        400,
        "video_url",
    ),
    "unknown part": (with_part({"type": "audio_url", "audio_url": {}}), 400, "audio_url"),
    "unknown model": ({"model": "other", "messages": TEXT}, 400, "'other'"),
    "unsupported field": ({"model": "tiny", "messages": TEXT, "tools": []}, 400, "'tools'"),
    "nested unsupported field": (
        with_part({"type": "text", "text": "a", "cache_control": {}}),
        400,
        "'cache_control' in messages[0].content[0]",
    ),
    "max_tokens over cap": ({"model": "tiny", "messages": TEXT, "max_tokens": 99}, 400, "limit 8"),
    "not json": (b"{nope", 400, "not valid JSON"),
    "json list": (b"[]", 400, "JSON object"),
    "no messages": ({"model": "tiny", "messages": []}, 400, "messages"),
    "multi-turn": (
        {"model": "tiny", "messages": TEXT + [{"role": "assistant", "content": "x"}] + TEXT},
        400,
        "multi-turn",
    ),
    "remote url": (video("http://169.254.169.254/latest"), 400, "does not fetch remote"),
    "path outside root": (video("file:///etc/passwd"), 403, "outside --media-root"),
    "path traversal": (video("../../etc/passwd"), 403, "outside --media-root"),
    "missing file": (video("nope.mp4"), 404, "not a file"),
    "broken local mp4": (video("broken.mp4"), 400, "decodable"),
    "broken local png": (
        with_part({"type": "image_url", "image_url": {"url": "broken.png"}}),
        400,
        "not a JPEG, PNG or WebP",
    ),
    "bad base64": (video("data:video/mp4;base64,@@@"), 400, "base64"),
    "not a video": (
        video("data:video/mp4;base64," + base64.b64encode(b"x" * 64).decode()),
        400,
        "decodable",
    ),
    "not an image frame": (video("data:video/jpeg;base64,AAAA"), 400, "frame 1"),
    "10000x10000 png": (
        with_part({"type": "image_url", "image_url": {"url": "data:image/png;base64," + BIG_PNG}}),
        413,
        "10000x10000",
    ),
    "too many frames": (video("data:video/png;base64," + ",".join(["AAAA"] * 300)), 413, "300"),
    "metadata for an mp4": (
        {**video("data:video/mp4;base64,AAAA"), "video_metadata": [{"fps": 2.0}]},
        400,
        "per-frame images",
    ),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_request_gets_a_4xx_line(server, case):
    body, status, needle = HOSTILE[case]
    got, message = post(server, body)
    assert got == status, message
    assert needle in message and "\n" not in message and "Traceback" not in message


def test_announced_huge_body_is_refused_at_once(server):
    head = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 400000000\r\n\r\n"
    data, seconds = raw(server, head)
    assert data.startswith(b"HTTP/1.1 413") and seconds < 5


def test_body_over_the_limit_is_refused(server):
    status, message = post(server, b"{" + b" " * (3 * 1024**2) + b"}")
    assert status == 413 and "--max-body-mb" in message


def test_slow_body_times_out(server):
    head = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{"
    data, seconds = raw(server, head)
    assert data.startswith(b"HTTP/1.1 408") and seconds < 5


@pytest.mark.parametrize("sent", [b"", b"POST /v1/chat/completions HTTP/1.1\r\nHost: x"])
def test_slow_headers_are_cut_off(server, sent):
    data, seconds = raw(server, sent or b"")
    assert data == b"" and seconds < 5  # closed by the server (1 s header deadline)


@pytest.mark.parametrize("length", [b"-1", b"abc"])
def test_bad_content_length(server, length):
    head = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " + length
    data, seconds = raw(server, head + b"\r\n\r\n{}")
    assert data.startswith(b"HTTP/1.1 400") and seconds < 5


def test_unknown_route_is_a_404_line(server):
    address = urlsplit(server.url)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=10)
    connection.request("GET", "/admin")
    answer = connection.getresponse()
    assert (
        answer.status == 404
        and "no route GET /admin" in json.loads(answer.read())["error"]["message"]
    )


def test_server_still_answers_after_the_abuse(server):
    address = urlsplit(server.url)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=60)
    connection.request(
        "POST",
        "/v1/chat/completions",
        body=json.dumps({"model": "tiny", "messages": TEXT, "max_tokens": 2}),
        headers={"Content-Type": "application/json"},
    )
    answer = connection.getresponse()
    assert answer.status == 200 and json.loads(answer.read())["choices"]
