"""What `eval --endpoint` sends is what training encodes: a record's own prompt keeps its
media where its `<video>` / `<image>` placeholder stands, and the timing sent follows
`video.time_encoding` (`processor_default`: frame i at i / 2 s, as in-process)."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch

from videorl.eval.openai_backend import chat_request
from videorl.inference import RunSettings
from videorl.models.inputs import chat_messages, hf_video_metadata
from videorl.serve.chat import ChatService, user_text
from videorl.serve.limits import ServeLimits
from videorl.serve.media import MediaPolicy, video_of
from videorl.serve.schema import ChatRequest
from videorl.video.cache import VideoCache

from .conftest import SMALL_VIDEO, records_of

OWN_PROMPT = (
    "Watch this clip: <video> When does the event happen? Answer as <answer>S to E</answer>."
)


def own_prompt_record(synth_tg):
    record = records_of(synth_tg)[0]
    return dataclasses.replace(record, prompt=OWN_PROMPT, system="You are a video assistant.")


def parsed(body) -> ChatRequest:
    return ChatRequest.model_validate(json.loads(json.dumps(body)))


def test_own_prompt_puts_the_video_where_its_placeholder_is(synth_tg):
    record = own_prompt_record(synth_tg)
    video = VideoCache(SMALL_VIDEO).get(record.video)
    body = chat_request(record, video, model="m", max_tokens=8)
    system, user = body["messages"]
    assert system == {"role": "system", "content": "You are a video assistant."}
    assert [part["type"] for part in user["content"]] == ["text", "video_url", "text"]
    assert user["content"][0]["text"] == "Watch this clip: "
    assert user["content"][2]["text"].startswith(" When does the event happen?")
    assert not any("<video>" in part.get("text", "") for part in user["content"])
    # the order training's `chat_messages` gives the template
    training = chat_messages(OWN_PROMPT, video=True, system=record.system)[-1]["content"]
    assert [p["type"] for p in training] == ["text", "video", "text"]
    sent = [p.get("text") for p in user["content"]]
    assert sent == [p.get("text") for p in training]


def test_family_prompt_keeps_the_media_first(synth_tg):
    record = records_of(synth_tg)[0]
    video = VideoCache(SMALL_VIDEO).get(record.video)
    body = chat_request(record, video, model="m", max_tokens=8)
    (user,) = body["messages"]
    assert [part["type"] for part in user["content"]] == ["video_url", "text"]


def test_server_rebuilds_the_own_prompt_text(synth_tg):
    record = own_prompt_record(synth_tg)
    video = VideoCache(SMALL_VIDEO).get(record.video)
    request = parsed(chat_request(record, video, model="m", max_tokens=8))
    assert user_text(list(request.messages[-1].content)) == OWN_PROMPT  # type: ignore[arg-type]  # a user message with parts
    media_first = parsed(chat_request(records_of(synth_tg)[0], video, model="m", max_tokens=8))
    text = user_text(list(media_first.messages[-1].content))  # type: ignore[arg-type]  # a user message with parts
    assert "<video>" not in text and "Find the start and end" in text


@pytest.mark.slow
def test_served_own_prompt_encodes_as_training(synth_tg, tiny_model_dir):
    """`videorl serve` encodes the request into the token ids training encodes."""
    from videorl.models.loading import load_model

    loaded = load_model(tiny_model_dir())
    record = own_prompt_record(synth_tg)
    video = VideoCache(SMALL_VIDEO).get(record.video)
    settings = RunSettings(video=SMALL_VIDEO)
    body = chat_request(record, video, model="tiny", max_tokens=8, settings=settings)
    service = ChatService(loaded, "tiny", MediaPolicy(SMALL_VIDEO, ServeLimits()))
    served = service.prompt(parsed(body)).encoding.input_ids
    trained = settings.encode(loaded, record, video).input_ids
    assert torch.equal(served, trained)


def test_processor_default_sends_frame_i_at_i_over_2(synth_tg):
    record = records_of(synth_tg)[0]
    config = dataclasses.replace(SMALL_VIDEO, time_encoding="processor_default")
    video = VideoCache(config).get(record.video)
    count = int(video.frames.shape[0])
    assert video.meta.fps != pytest.approx(2.0)  # the real sampling is not 2 fps
    body = chat_request(record, video, model="m", max_tokens=8)
    assert body["mm_processor_kwargs"] == {"fps": 2.0, "do_sample_frames": False}
    (metadata,) = body["video_metadata"]
    assert metadata["timestamps"] == [i / 2 for i in range(count)]
    assert metadata["frame_indices"] == list(range(count))
    assert metadata["fps"] == metadata["source_fps"] == 2.0
    assert metadata["duration"] == count / 2
    # a server sampling in either encoding hands its processor what in-process eval does
    expected = hf_video_metadata(video.meta, count)
    for encoding in ("sampled", "processor_default"):
        policy = MediaPolicy(
            dataclasses.replace(SMALL_VIDEO, time_encoding=encoding), ServeLimits()
        )
        request = parsed(body)
        part = next(p for p in request.messages[-1].content if p.type == "video_url")
        seen = hf_video_metadata(video_of(part, request, policy).meta, count)  # type: ignore[arg-type]  # the part of type video_url is a VideoPart
        for key in ("fps", "frames_indices", "total_num_frames", "duration"):
            assert getattr(seen, key) == pytest.approx(getattr(expected, key)), (encoding, key)


def test_sampled_sends_the_actual_timing(synth_tg):
    record = records_of(synth_tg)[0]
    video = VideoCache(SMALL_VIDEO).get(record.video)
    body = chat_request(record, video, model="m", max_tokens=8)
    assert body["mm_processor_kwargs"]["fps"] == video.meta.fps
    assert body["video_metadata"][0]["timestamps"] == list(video.meta.timestamps)
