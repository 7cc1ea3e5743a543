"""Evaluate a model behind an OpenAI-compatible chat-completions server (vLLM, `videorl serve`).

The request carries the decoded frames the way vLLM accepts them, so both servers see the
frames videorl sampled (the actual fps and timestamps, docs/methods.md#video-contract):

    {"model": NAME, "temperature": 0, "max_tokens": N,
     "messages": [{"role": "user", "content": [
         {"type": "video_url", "video_url": {"url": "data:video/jpeg;base64,<f1>,<f2>,..."}},
         {"type": "text", "text": "<the family prompt>"}]}],
     "mm_processor_kwargs": {"fps": <actual sampled fps>, "do_sample_frames": false},
     "video_metadata": [{"fps": ..., "timestamps": [...], "frame_indices": [...],
                         "source_fps": ..., "duration": ...}]}

A record with its own prompt (`TaskRecord.prompt`, a `<video>` / `<image>` placeholder
inside) has the media part where the placeholder stands, text parts around it, and its
`system` message first: the turn `models.inputs.chat_messages` builds for training. With
`video.time_encoding: processor_default` (Video-R1's convention) the timing sent is what the
processor is told in-process: 2 fps, frame i at i / 2 s (`processor_timing`).

The text and `chat_template_kwargs` follow the served checkpoint's run settings
(`inference.RunSettings`: prompt style, think mode, template variables), and the records'
boxes are converted to the served model family's convention (`model_type`), as the
in-process `HFBackend` does. Frames are per-frame base64 JPEGs (quality 95); an image is
one `image_url` data URL.
`mm_processor_kwargs` is vLLM's; `video_metadata` is videorl's (vLLM ignores unknown
fields). Requests run concurrently in a thread pool; a failed request is retried, then
raises `EndpointError` naming the URL, the status and the server's message.
"""

from __future__ import annotations

import base64
import io
import json
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import torch

from videorl.data.published_prompts import style_system
from videorl.data.records import TaskRecord
from videorl.errors import VideoRLError
from videorl.eval.backends import Item
from videorl.inference import RunSettings

JPEG_QUALITY = 95
VIDEO_JPEG = "data:video/jpeg;base64,"
IMAGE_JPEG = "data:image/jpeg;base64,"


class EndpointError(VideoRLError):
    """The chat-completions server could not be reached or answered with an error."""


def _jpeg(frame: torch.Tensor) -> str:
    """Base64 JPEG of one uint8 frame `C x H x W` (Pillow)."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(frame.permute(1, 2, 0).contiguous().numpy()).save(
        buffer, "JPEG", quality=JPEG_QUALITY
    )
    return base64.b64encode(buffer.getvalue()).decode()


def video_data_url(frames: torch.Tensor) -> str:
    """`data:video/jpeg;base64,<f1>,<f2>,...` from uint8 frames `T x C x H x W`."""
    return VIDEO_JPEG + ",".join(_jpeg(frame) for frame in frames)


def image_data_url(frame: torch.Tensor) -> str:
    """`data:image/jpeg;base64,<jpeg>` from one uint8 frame `C x H x W`."""
    return IMAGE_JPEG + _jpeg(frame)


def video_metadata(meta: Any) -> dict[str, Any]:
    """The temporal facts of sampled frames (`video.meta.VideoMeta`) as JSON."""
    return {
        "fps": meta.fps,
        "timestamps": list(meta.timestamps),
        "frame_indices": list(meta.frame_indices),
        "source_fps": meta.source_fps,
        "duration": meta.duration,
    }


def processor_timing(meta: Any, num_frames: int) -> tuple[float, dict[str, Any]]:
    """(`mm_processor_kwargs.fps`, `video_metadata[0]`) of sampled frames, as the processor
    is told their timing in-process (`models.inputs.hf_video_metadata`, `meta.time_encoding`):
    `sampled`: the actual sampled fps and the true timestamps; `processor_default`
    (Video-R1's convention): frame i at `i / 2` s, 2 fps, whatever the real sampling."""
    from videorl.video.meta import PROCESSOR_DEFAULT_FPS

    if getattr(meta, "time_encoding", "sampled") != "processor_default":
        return meta.fps, video_metadata(meta)
    fps = PROCESSOR_DEFAULT_FPS
    return fps, {
        "fps": fps,
        "timestamps": [i / fps for i in range(num_frames)],
        "frame_indices": list(range(num_frames)),
        "source_fps": fps,
        "duration": num_frames / fps,
    }


def chat_request(
    record: TaskRecord,
    media: Any,
    *,
    model: str,
    max_tokens: int,
    settings: RunSettings | None = None,
) -> dict[str, Any]:
    """The chat-completions body for one record and its decoded media (greedy), prompted
    with `settings` (the served checkpoint's run settings; default: videorl's, no think)."""
    from videorl.models.inputs import chat_messages

    settings = settings or RunSettings()
    body: dict[str, Any] = {"model": model, "temperature": 0.0, "max_tokens": max_tokens}
    is_video = media is not None and record.video is not None
    is_image = media is not None and not is_video
    media_part: dict[str, Any] | None = None
    if is_video:
        media_part = {"type": "video_url", "video_url": {"url": video_data_url(media.frames)}}
        fps, metadata = processor_timing(media.meta, int(media.frames.shape[0]))
        body["mm_processor_kwargs"] = {"fps": fps, "do_sample_frames": False}
        body["video_metadata"] = [metadata]
    elif is_image:
        media_part = {"type": "image_url", "image_url": {"url": image_data_url(media.frames[0])}}
    # training's turn layout: the media where the record's own prompt has its placeholder
    # (`<video>` / `<image>`), else first; a record's system message before it
    system = record.system or style_system(settings.prompt_style)  # as training's
    messages = chat_messages(
        settings.prompt_text(record), video=is_video, image=is_image, system=system
    )
    for message in messages:
        if isinstance(message["content"], list):
            message["content"] = [
                media_part if part["type"] in ("video", "image") else part
                for part in message["content"]
            ]
    body["messages"] = messages
    # vLLM and `videorl serve` pass these to the chat template (Qwen3: enable_thinking)
    body["chat_template_kwargs"] = settings.template_kwargs()
    return body


def completions_url(endpoint: str) -> str:
    """`http://host:port`, `.../v1` or the full `.../v1/chat/completions` -> the full URL."""
    url = endpoint.rstrip("/")
    if url.endswith("/chat/completions"):
        return url
    return url + ("/chat/completions" if url.endswith("/v1") else "/v1/chat/completions")


def post_json(
    url: str, body: dict[str, Any], *, timeout: float, api_key: str | None = None
) -> dict[str, Any]:
    """POST `body` as JSON and return the JSON answer; errors name the URL and the status."""
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers=headers, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return json.loads(answer.read())
    except urllib.error.HTTPError as err:
        detail = err.read().decode(errors="replace")[:500]
        raise EndpointError(f"{url} answered HTTP {err.code}: {detail}") from None
    except (urllib.error.URLError, TimeoutError, ConnectionError) as err:
        reason = getattr(err, "reason", err)
        raise EndpointError(
            f"cannot reach {url} ({reason}); start the server (`videorl serve --model PATH` or "
            "`vllm serve PATH`) or fix --endpoint"
        ) from None


class EndpointBackend:
    """Concurrent greedy requests to an OpenAI-compatible server. `settings` are the served
    checkpoint's run settings; `model_type` (config.json's, e.g. `qwen3_vl`) is the served
    model's family, whose box convention the records are converted to (None: none)."""

    def __init__(
        self,
        endpoint: str,
        served_model: str,
        settings: RunSettings | None = None,
        *,
        model_type: str | None = None,
        max_new_tokens: int = 256,
        concurrency: int = 8,
        timeout: float = 600.0,
        retries: int = 2,
        api_key: str | None = None,
    ) -> None:
        self.url = completions_url(endpoint)
        self.settings = settings or RunSettings()
        self.model_type = model_type
        self.served_model = served_model
        self.max_new_tokens = max_new_tokens
        self.concurrency = max(1, concurrency)
        self.timeout = timeout
        self.retries = retries
        self.api_key = api_key
        self.label = f"{served_model} @ {self.url}"

    @property
    def coordinates(self) -> str | None:
        """The served model family's box convention (as `HFBackend.coordinates`), None
        without a model type."""
        return None if self.model_type is None else self.settings.convention(self.model_type)

    def request(self, item: Item) -> dict[str, Any]:
        """The request body for one (record, media) item."""
        record, media = item
        return chat_request(
            record,
            media,
            model=self.served_model,
            max_tokens=self.max_new_tokens,
            settings=self.settings,
        )

    def _one(self, item: Item) -> str:
        record, _ = item
        body = self.request(item)
        for attempt in range(self.retries + 1):
            try:
                answer = post_json(self.url, body, timeout=self.timeout, api_key=self.api_key)
                break
            except EndpointError:
                if attempt == self.retries:
                    raise
                time.sleep(0.5 * 2**attempt)
        try:
            return answer["choices"][0]["message"]["content"] or ""
        except (KeyError, IndexError, TypeError):
            raise EndpointError(
                f"{self.url} answered without choices[0].message.content for record {record.id}: "
                f"{json.dumps(answer)[:300]}"
            ) from None

    def respond(self, items: Sequence[Item]) -> list[str]:
        if not items:
            return []
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(items))) as pool:
            return list(pool.map(self._one, items))
