"""A client of the running demo cannot make it read a server file.

Against the real server, over HTTP, the way an attacker would call it: the `/run` endpoint
given a FileData whose `path` names a file that was never uploaded (in the system temp
folder, in the demo's own folder beside its uploads and examples, through `..`, through a
symlink planted in the uploads) gets no answer about that file, and nothing of it reaches
the demo's folders. A genuine upload and an example are answered.

Note on `gradio_client`: `Client.predict(video={"path": P, "meta": {"_type":
"gradio.FileData"}})` (or `handle_file(P)`) *uploads* P from the client's own disk first;
on one machine that is the server's file, sent by the client: an upload, and answered
(`test_a_client_side_file_is_an_upload`). A remote client cannot name the server's files.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from videorl.demo.guard import REFUSED

from .test_app import needs_gradio

pytestmark = [needs_gradio, pytest.mark.slow]


def _call(url: str, api: str, data: list) -> str:
    """POST /gradio_api/call/API with `data`, then read the event stream: its text."""
    import httpx

    posted = httpx.post(f"{url}/gradio_api/call/{api}", json={"data": data}, timeout=60)
    assert posted.status_code == 200, posted.text
    event = posted.json()["event_id"]
    return httpx.get(f"{url}/gradio_api/call/{api}/{event}", timeout=300).text


def _call_run(url: str, video: dict | None, label: str | None = None) -> str:
    import httpx

    info = httpx.get(f"{url}/gradio_api/info", timeout=60).json()["named_endpoints"]["/run"]
    data = [p.get("parameter_default") for p in info["parameters"]]
    data[:5] = [video, "temporal_grounding", "the shape", "", label]
    return _call(url, "run", data)


def _completed(stream: str) -> list:
    return json.loads(stream.split("event: complete", 1)[1].split("data:", 1)[1].strip())


def _file_data(path) -> dict:
    return {"path": str(path), "meta": {"_type": "gradio.FileData"}}


def _answered(stream: str) -> bool:
    """Whether the stream carries a model answer (not an error, not the refusal)."""
    if "event: complete" not in stream:
        return False
    answer = _completed(stream)[0]
    return REFUSED not in answer and "Cannot answer" not in answer


def test_server_paths_are_never_read(demo, tmp_path, make_video):
    secret = tmp_path / "secret.mp4"  # in the system temp folder, never uploaded
    secret.write_bytes(Path(make_video(2.0, name="s.mp4")).read_bytes() + b"SECRET-MARK")
    beside = demo.folder / "beside.mp4"  # in the demo's folder, outside uploads and examples
    shutil.copy(secret, beside)
    uploads = demo.folder / "uploads"
    uploads.mkdir(exist_ok=True)
    (uploads / "planted.mp4").symlink_to(secret)
    url = demo.url.rstrip("/")
    examples = demo.folder / "examples"
    for path in (
        secret,
        beside,
        examples / ".." / "beside.mp4",
        examples / ".." / ".." / secret.parent.name / "secret.mp4",
        uploads / "planted.mp4",
        "/etc/hostname",
    ):
        stream = _call_run(url, _file_data(path))
        assert not _answered(stream), (path, stream[:300])
    import httpx

    for path in (secret, demo.folder / "examples"):  # the refusal names no server folder
        refused = httpx.get(f"{url}/gradio_api/file={path}", timeout=60)
        assert refused.status_code == 403 and refused.json() == {"detail": "File not allowed."}
    files = [p for p in demo.folder.rglob("*") if p.is_file() and not p.is_symlink()]
    copied = [p for p in files if p.read_bytes().endswith(b"SECRET-MARK")]
    assert sorted(copied) == [beside], copied  # nothing was copied into the demo's folders
    beside.unlink()
    (uploads / "planted.mp4").unlink()


def test_uploads_and_examples_are_answered(demo, make_video, examples):
    import httpx

    url = demo.url.rstrip("/")
    clip = make_video(2.0, name="mine.mp4")
    with open(clip, "rb") as f:
        uploaded = httpx.post(
            f"{url}/gradio_api/upload", files={"files": ("mine.mp4", f)}, timeout=60
        ).json()[0]
    assert _answered(_call_run(url, _file_data(uploaded)))
    # an example as the browser asks for it: /pick serves its video, /run gets it back
    label = examples[0].label  # the demo makes the same examples (fixed seed)
    video = _completed(_call(url, "pick", [label]))[0]
    assert _answered(_call_run(url, video, label))


def test_a_client_side_file_is_an_upload(demo, make_video):
    from gradio_client import Client, handle_file

    clip = make_video(2.0, name="client.mp4")  # the client's own file (same machine here)
    client = Client(demo.url, verbose=False)
    info = client.view_api(return_format="dict", print_info=False)["named_endpoints"]["/run"]
    rest = [p.get("parameter_default") for p in info["parameters"][5:]]
    answer, *_ = client.predict(
        handle_file(clip), "temporal_grounding", "the shape", "", None, *rest, api_name="/run"
    )
    assert REFUSED not in answer
    uploaded = [p for p in (demo.folder / "uploads").rglob("client.mp4")]
    assert uploaded, "gradio_client sent the file's bytes: it sits in the demo's uploads"
