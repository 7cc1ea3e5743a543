"""`videorl serve` driven by the `openai` client on 127.0.0.1: answers equal in-process ones."""

from __future__ import annotations

import base64

import openai
import pytest
import torch
from openai.types.chat import ChatCompletionMessageParam

from videorl.models.generate import SamplingParams, generate
from videorl.models.inputs import encode_prompt
from videorl.video.decode import decode_video

from .conftest import SMALL_VIDEO, start_server


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.url, api_key="unused", max_retries=0, timeout=120)


def in_process(loaded, text, video=None, seed=None, **params):
    """What in-process generation answers (texts, one per sample)."""
    if seed is not None:
        torch.manual_seed(seed)
    prompt = encode_prompt(loaded, text, video=video)
    generation = generate(loaded, [prompt], SamplingParams(**params))[0]
    return [loaded.tokenizer.decode(t, skip_special_tokens=True) for t in generation.token_ids]


def mp4_part(path):
    data = base64.b64encode(path.read_bytes()).decode()
    return {"type": "video_url", "video_url": {"url": f"data:video/mp4;base64,{data}"}}


def test_mp4_data_url_answers_as_in_process(client, loaded, media_root):
    question = "When does the square move?"
    answer = client.chat.completions.create(
        model="tiny",
        messages=[
            {
                "role": "user",
                "content": [mp4_part(media_root / "clip.mp4"), {"type": "text", "text": question}],
            }
        ],
        max_tokens=8,
        temperature=0,
    )
    video = decode_video(media_root / "clip.mp4", SMALL_VIDEO)
    expected = in_process(loaded, question, video, max_new_tokens=8, temperature=0.0)
    assert [c.message.content for c in answer.choices] == expected
    assert answer.usage.prompt_tokens == encode_prompt(loaded, question, video=video).length


def test_local_path_under_media_root(client, loaded, media_root):
    answer = client.chat.completions.create(
        model="tiny",
        messages=[
            {
                "role": "user",
                "content": [
                    {"type": "video_url", "video_url": {"url": "clip.mp4"}},
                    {"type": "text", "text": "what?"},
                ],
            }
        ],
        max_tokens=8,
        temperature=0,
    )
    video = decode_video(media_root / "clip.mp4", SMALL_VIDEO)
    assert (
        answer.choices[0].message.content
        == in_process(loaded, "what?", video, max_new_tokens=8, temperature=0.0)[0]
    )


def test_n2_with_seed_equals_in_process_sampling(client, loaded):
    messages = [{"role": "user", "content": "Count to three."}]
    answer = client.chat.completions.create(
        model="tiny", messages=messages, n=2, temperature=1.0, top_p=0.9, seed=7, max_tokens=8
    )
    expected = in_process(
        loaded, "Count to three.", seed=7, n=2, max_new_tokens=8, temperature=1.0, top_p=0.9
    )
    assert [c.index for c in answer.choices] == [0, 1]
    assert [c.message.content for c in answer.choices] == expected
    again = client.chat.completions.create(
        model="tiny", messages=messages, n=2, temperature=1.0, top_p=0.9, seed=7, max_tokens=8
    )
    assert [c.message.content for c in again.choices] == expected


def test_stream_deltas_concatenate_to_the_answer(client):
    request = {
        "model": "tiny",
        "messages": [{"role": "user", "content": "Say hi."}],
        "max_tokens": 8,
        "temperature": 0,
        "n": 2,
    }
    whole = client.chat.completions.create(**request)
    texts = {0: "", 1: ""}
    finish: dict[int, str] = {}
    usage = None
    stream = client.chat.completions.create(
        **request, stream=True, stream_options={"include_usage": True}
    )
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            texts[choice.index] += choice.delta.content or ""
            if choice.finish_reason:
                finish[choice.index] = choice.finish_reason
    assert texts == {c.index: c.message.content for c in whole.choices}
    assert finish == {c.index: c.finish_reason for c in whole.choices}
    assert usage is not None and usage.completion_tokens == whole.usage.completion_tokens


def test_client_errors_name_the_problem(client):
    messages = [{"role": "user", "content": "hi"}]
    with pytest.raises(openai.BadRequestError, match="model 'gpt-4o' is not served here.*'tiny'"):
        client.chat.completions.create(model="gpt-4o", messages=messages)
    with pytest.raises(openai.BadRequestError, match="unsupported field 'logprobs'"):
        client.chat.completions.create(model="tiny", messages=messages, logprobs=True)
    with pytest.raises(openai.BadRequestError, match="max_tokens=9 is over .* limit 8"):
        client.chat.completions.create(model="tiny", messages=messages, max_tokens=9)
    with pytest.raises(openai.BadRequestError, match="n=5 is over .* limit 4"):
        client.chat.completions.create(model="tiny", messages=messages, n=5)
    assert [m.id for m in client.models.list().data] == ["tiny"]


def test_api_key_is_required_when_set(loaded, media_root):
    handle, queue = start_server(loaded, media_root, api_key="s3cret")
    with handle:
        messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hi"}]
        wrong = openai.OpenAI(base_url=handle.url, api_key="guess", max_retries=0)
        with pytest.raises(openai.AuthenticationError, match="API key"):
            wrong.chat.completions.create(model="tiny", messages=messages, max_tokens=2)
        with pytest.raises(openai.AuthenticationError):
            wrong.models.list()
        right = openai.OpenAI(base_url=handle.url, api_key="s3cret", max_retries=0)
        answer = right.chat.completions.create(model="tiny", messages=messages, max_tokens=2)
        assert answer.choices[0].message.role == "assistant"
    queue.close()


def test_image_path_under_media_root(client, loaded, media_root):
    from videorl.video.decode import load_image

    part = {"type": "image_url", "image_url": {"url": "file://" + str(media_root / "still.png")}}
    answer = client.chat.completions.create(
        model="tiny",
        messages=[{"role": "user", "content": [part, {"type": "text", "text": "what?"}]}],
        max_tokens=8,
        temperature=0,
    )
    image = load_image(media_root / "still.png", SMALL_VIDEO)
    prompt = encode_prompt(loaded, "what?", image=image)
    (generation,) = generate(loaded, [prompt], SamplingParams(max_new_tokens=8, temperature=0.0))
    expected = loaded.tokenizer.decode(generation.token_ids[0], skip_special_tokens=True)
    assert answer.choices[0].message.content == expected
