"""The demo reads only its own uploads and examples, within limits, and is never public
without a password."""

from __future__ import annotations

import os

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from tests.cli_runner import run_cli
from videorl.cli import app as cli
from videorl.demo.guard import REFUSED, DemoLimits, client_video, parse_auth
from videorl.demo.inference import Settings
from videorl.errors import ConfigError

from .test_app import needs_gradio


@pytest.fixture
def folders(tmp_path, make_video):
    uploads = tmp_path / "demo" / "uploads"
    uploads.mkdir(parents=True)
    clip = uploads / "clip.mp4"
    os.replace(make_video(2.0), clip)
    secret = tmp_path / "secret.png"  # never uploaded
    Image.fromarray(np.full((48, 64, 3), 200, np.uint8)).save(secret)
    (uploads / "link.mp4").symlink_to(secret)
    return uploads, clip, secret


def test_only_files_inside_the_demo_folders_are_read(folders):
    uploads, clip, secret = folders
    limits = DemoLimits()
    assert client_video(str(clip), [uploads], limits) == str(clip.resolve())
    refused = [
        str(secret),
        "/etc/passwd",
        str(uploads / ".." / ".." / "secret.png"),
        str(uploads / "link.mp4"),  # a symlink out of the folder
        str(uploads / "missing.mp4"),
        str(uploads),  # a folder
        "clip.mp4\x00",
        "",
        None,
    ]
    for path in refused:
        assert client_video(path, [uploads], limits) is None, path
    assert client_video(str(clip), [uploads], DemoLimits(max_upload_mb=1e-6)) is None


def _run_handler(blocks):
    (fn,) = [f.fn for f in blocks.fns.values() if getattr(f, "name", "") == "run"]
    return fn


def _ask(run, video, **overrides):
    values = {"greedy": True, "temperature": 0.7, "top_p": 0.95, "max_new_tokens": 4}
    values.update({"fps": 2.0, "max_frames": 4, "think": False, **overrides})
    order = ("greedy", "temperature", "top_p", "max_new_tokens", "fps", "max_frames", "think")
    return run(video, "temporal_grounding", "the clip", "", None, *(values[k] for k in order))


@needs_gradio
def test_the_app_refuses_every_path_outside_its_folders_with_one_message(tiny_loaded, folders):
    from videorl.demo.app import build_app

    uploads, clip, secret = folders
    blocks = build_app(tiny_loaded, [], Settings(max_new_tokens=4), "tiny", (uploads,))
    run = _run_handler(blocks)
    for path in (str(secret), "/etc/passwd", str(uploads / "link.mp4"), "/no/such/file.mp4"):
        answer, reasoning, _, timeline, frames, _ = _ask(run, path)
        assert answer == REFUSED, path  # the same text whether the file exists or not
        assert reasoning == "" and timeline["visible"] is False
        assert frames["visible"] is False and frames["value"] is None
    answer, *_ = _ask(run, str(clip), max_frames=100_000)
    assert "max frames=100000 is outside [2, 512]" in answer
    answer, *_ = _ask(run, str(clip))
    assert answer != REFUSED and "Cannot answer" not in answer


@needs_gradio
def test_uploads_over_the_size_limit_are_rejected(tiny_loaded):
    import httpx

    from videorl.demo.app import running_demo

    limits = DemoLimits(max_upload_mb=0.01)
    with running_demo(tiny_loaded, title="tiny", limits=limits) as demo:
        url = demo.url.rstrip("/") + "/gradio_api/upload"
        small = httpx.post(url, files={"files": ("a.mp4", b"x" * 1000)}, timeout=60)
        large = httpx.post(url, files={"files": ("b.mp4", b"x" * 20_000)}, timeout=60)
    assert small.status_code == 200, small.text
    assert large.status_code == 413, large.text


def test_share_needs_a_password(monkeypatch, tmp_path, capsys):
    import videorl.demo.app

    calls = []
    monkeypatch.setattr(videorl.demo.app, "serve", lambda model, **kw: calls.append(kw))
    refused = run_cli(capsys, monkeypatch, "demo", "--model", tmp_path, "--share")
    assert refused.code == 2 and len(refused.lines) == 1, refused.output
    assert "--auth USER:PASS" in refused.output and calls == []
    runner = CliRunner()
    shared = runner.invoke(cli, ["demo", "--model", str(tmp_path), "--share", "--auth", "me:pw"])
    assert shared.exit_code == 0, shared.output
    assert calls[0]["share"] is True and calls[0]["auth"] == "me:pw"
    assert parse_auth("me:pw", share=True) == ("me", "pw")
    for bad in ("me", ":pw", "me:"):
        with pytest.raises(ConfigError, match="USER:PASS"):
            parse_auth(bad, share=False)


def test_a_403_names_no_server_path():
    """gradio's 403 said `File not allowed: /tmp/videorl-demo-.../examples.`: the folder."""
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.responses import JSONResponse, PlainTextResponse
    from starlette.routing import Route
    from starlette.testclient import TestClient

    from videorl.demo.guard import PlainForbidden

    def refuse(request):
        return JSONResponse({"detail": "File not allowed: /tmp/videorl-demo-x/examples."}, 403)

    def fine(request):
        return PlainTextResponse("ok")

    app = Starlette(
        routes=[Route("/file", refuse), Route("/ok", fine)], middleware=[Middleware(PlainForbidden)]
    )
    client = TestClient(app)
    refused = client.get("/file")
    assert refused.status_code == 403 and refused.json() == {"detail": "File not allowed."}
    assert client.get("/ok").text == "ok"


@pytest.mark.parametrize(
    "limits, message",
    [
        ({"max_upload_mb": 0}, r"^--max-upload-mb=0 must be > 0$"),
        ({"max_frames": 1}, r"^--max-frames=1 must be >= 2$"),
        ({"max_fps": 0.0}, r"^demo limit max_fps=0\.0 must be > 0$"),
        ({"max_new_tokens": 0}, r"^demo limit max_new_tokens=0 must be >= 1$"),
    ],
)
def test_a_limit_out_of_range_names_its_flag_or_field(limits, message):
    with pytest.raises(ConfigError, match=message):
        DemoLimits(**limits)
