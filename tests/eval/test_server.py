"""The OpenAI-compatible endpoint backend against `videorl serve`, end to end on 127.0.0.1."""

from __future__ import annotations

import json
import urllib.request

import pytest

from videorl.data.records import record_from_dict
from videorl.errors import VideoRLError
from videorl.eval.backends import HFBackend
from videorl.eval.openai_backend import (
    EndpointBackend,
    EndpointError,
    chat_request,
    completions_url,
    post_json,
)
from videorl.eval.runner import EvalSettings, evaluate
from videorl.models.loading import load_model
from videorl.serve.app import ServerThread, create_app
from videorl.serve.chat import ChatService
from videorl.serve.engine import GenerationQueue
from videorl.serve.limits import ServeLimits
from videorl.serve.media import MediaPolicy, video_of
from videorl.serve.schema import ChatRequest
from videorl.video.cache import VideoCache

from .conftest import SMALL_VIDEO, records_of


def test_request_carries_frames_and_timing(synth_tg):
    record = records_of(synth_tg)[0]
    video = VideoCache(SMALL_VIDEO).get(record.video)
    body = json.loads(json.dumps(chat_request(record, video, model="m", max_tokens=8)))
    part = body["messages"][0]["content"][0]
    assert part["type"] == "video_url" and part["video_url"]["url"].startswith(
        "data:video/jpeg;base64,"
    )
    assert body["mm_processor_kwargs"] == {"fps": video.meta.fps, "do_sample_frames": False}
    assert "Find the start and end" in body["messages"][0]["content"][1]["text"]
    seen = received_video(body)
    assert seen.frames.shape == video.frames.shape
    assert seen.meta.timestamps == pytest.approx(video.meta.timestamps)
    assert seen.meta.fps == video.meta.fps and seen.meta.frame_indices == video.meta.frame_indices
    assert (seen.frames.float() - video.frames.float()).abs().mean() < 8  # JPEG, quality 95


@pytest.mark.parametrize(
    "endpoint", ["http://h:1", "http://h:1/", "http://h:1/v1", "http://h:1/v1/chat/completions"]
)
def test_completions_url(endpoint):
    assert completions_url(endpoint) == "http://h:1/v1/chat/completions"


def received_video(body):
    """The video the server decodes from a request body (None for text or an image)."""
    request = ChatRequest.model_validate(json.loads(json.dumps(body)))
    parts = [p for p in request.messages[-1].content if p.type == "video_url"]
    policy = MediaPolicy(SMALL_VIDEO, ServeLimits())
    return video_of(parts[0], request, policy) if parts else None  # type: ignore[arg-type]  # the part of type video_url is a VideoPart


@pytest.fixture(scope="module")
def served(tiny_model_dir):
    loaded = load_model(tiny_model_dir())
    queue = GenerationQueue(loaded, max_batch=1)
    policy = MediaPolicy(SMALL_VIDEO, ServeLimits(max_new_tokens=8))
    with ServerThread(create_app(ChatService(loaded, "tiny", policy), queue)) as handle:
        yield loaded, handle.url
    queue.close()


@pytest.mark.slow
def test_endpoint_eval_round_trip(served, synth_all, tmp_path):
    loaded, url = served
    settings = EvalSettings(
        benchmark=str(synth_all),
        out_dir=tmp_path / "out",
        video=SMALL_VIDEO,
        batch_size=4,
        progress=False,
    )
    outputs = evaluate(
        settings, backend=EndpointBackend(url, "tiny", max_new_tokens=8, concurrency=4)
    )
    records = records_of(synth_all)
    assert {r.id for r in outputs.results} == {r.id for r in records}
    assert all(r.response is not None for r in outputs.results)
    # The server answers exactly what the in-process engine answers for the frames it got.
    local = HFBackend(loaded, max_new_tokens=8)
    by_id = {r.id: r.response for r in outputs.results}
    videos = VideoCache(SMALL_VIDEO)
    for record in (r for r in records if r.family.value in ("temporal_grounding", "math")):
        media = None if record.media is None else videos.get(record.media)
        body = chat_request(record, media, model="tiny", max_tokens=8)
        assert local.respond([(record, received_video(body))]) == [by_id[record.id]]


def test_models_route_and_bad_requests(served):
    _, url = served
    with urllib.request.urlopen(f"{url}/models", timeout=30) as answer:
        assert json.loads(answer.read())["data"][0]["id"] == "tiny"
    bad = {
        "model": "tiny",
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "video_url", "video_url": {"url": "http://example.com/v.mp4"}}
                ],
            }
        ],
    }
    with pytest.raises(EndpointError, match="HTTP 400.*does not fetch remote URLs"):
        post_json(completions_url(url), bad, timeout=30)
    with pytest.raises(EndpointError, match="HTTP 400.*messages"):
        post_json(completions_url(url), {"model": "tiny"}, timeout=30)


def test_unreachable_endpoint_names_the_fix():
    record = record_from_dict(
        {"id": "m", "family": "math", "problem": "1+1?", "answer": {"text": "2"}}
    )
    backend = EndpointBackend("http://127.0.0.1:9/v1", "x", retries=0, timeout=5)
    with pytest.raises(VideoRLError, match="cannot reach .*videorl serve"):
        backend.respond([(record, None)])


def test_text_only_request(served):
    _, url = served
    answer = post_json(
        completions_url(url),
        {
            "model": "tiny",
            "temperature": 0,
            "max_tokens": 4,
            "messages": [{"role": "user", "content": "hi"}],
        },
        timeout=60,
    )
    assert answer["choices"][0]["message"]["role"] == "assistant"
    assert answer["usage"]["completion_tokens"] <= 4
