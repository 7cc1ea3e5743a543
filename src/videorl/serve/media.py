"""The media of a chat request as decoded frames, with every size checked before decoding.

A `video_url` is one of
- an MP4 (or any container PyAV reads) as a data URL, `data:video/mp4;base64,...` (what vLLM
  accepts): sampled and resized with the server's `VideoConfig`, as a local file would be
  (`mm_processor_kwargs.fps` overrides the sampling fps);
- per-frame images, `data:video/jpeg;base64,<f1>,<f2>,...` (what `eval --endpoint` sends):
  used as given, timed by `video_metadata[0]` (else `mm_processor_kwargs.fps`, else 2 fps),
  the timing handed to the processor in the server's `video.time_encoding` (the run's);
- a local path, `file:///abs/path.mp4` or a path relative to `--media-root`, only under
  that root (symlinks resolved). Remote `http(s)://` URLs are never fetched.
An `image_url` is one image as a data URL or a path under the media root.

Limits (`ServeLimits`): frame count and `width * height` come from the image headers and the
container's stream before any pixel is decoded; so does `frames * w * h` of the request.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import io
import tempfile
import urllib.parse
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from videorl.errors import MediaError
from videorl.serve.limits import ServeLimits
from videorl.serve.schema import ChatRequest, ImagePart, RequestError, VideoPart
from videorl.video.decode import DecodedVideo, VideoConfig, decode_video, is_image_path, load_image
from videorl.video.meta import VideoMeta
from videorl.video.sampling import plan_frame_indices

DEFAULT_FPS = 2.0
FRAME_MIMES = ("video/jpeg", "video/png", "image/jpeg", "image/png", "image/webp")
IMAGE_FORMATS = ("JPEG", "PNG", "WEBP")


@dataclass(frozen=True)
class MediaPolicy:
    """How the server samples videos and what it allows."""

    video: VideoConfig
    limits: ServeLimits
    media_root: Path | None = None


def _too_large(what: str, size: int, limit: int, flag: str) -> RequestError:
    return RequestError(f"{what} is {size}, over the limit {limit} ({flag}); send less", status=413)


def _check_frame_pixels(what: str, width: int, height: int, limits: ServeLimits) -> None:
    """One frame's pixels within `--max-frame-pixels` (checked before decoding it)."""
    if width * height > limits.max_frame_pixels:
        raise _too_large(
            f"the pixel count of {what} ({width}x{height})",
            width * height,
            limits.max_frame_pixels,
            "--max-frame-pixels",
        )


def _data_url(url: str, kind: str) -> tuple[str, str]:
    """(mime type, base64 payload) of a data URL."""
    head, sep, payload = url[len("data:") :].partition(",")
    if not sep or not head.endswith(";base64"):
        raise RequestError(f"{kind}.url must be a base64 data URL (data:<mime>;base64,...)")
    return head[: -len(";base64")].lower(), payload


def _b64(chunk: str, kind: str, number: int | None = None) -> bytes:
    try:
        return base64.b64decode(chunk, validate=True)
    except (binascii.Error, ValueError):
        where = kind if number is None else f"{kind} frame {number}"
        raise RequestError(f"{where} is not valid base64") from None


def _local_path(url: str, kind: str, root: Path | None) -> Path:
    """The file a `file://` URL or a bare path names, only inside the media root."""
    if root is None:
        raise RequestError(
            f"{kind}: local paths are off; start the server with --media-root DIR to allow "
            "files under DIR, or send a data URL",
            status=403,
        )
    raw = urllib.parse.unquote(url[len("file://") :]) if url.startswith("file://") else url
    base = root.resolve()
    path = (base / raw).resolve()
    if not path.is_relative_to(base):
        raise RequestError(f"{kind}: {raw!r} is outside --media-root {base}", status=403)
    if not path.is_file():
        raise RequestError(f"{kind}: {raw!r} is not a file under --media-root {base}", status=404)
    return path


def _open_image(data: bytes, where: str, limits: ServeLimits) -> Any:
    """A PIL image with its header read (pixels not decoded yet), size checked."""
    from PIL import Image, UnidentifiedImageError

    try:
        with warnings.catch_warnings():  # the size is checked below, against our own limit
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data))
    except Image.DecompressionBombError:
        raise RequestError(
            f"{where} is over PIL's decompression-bomb limit; send a smaller image", status=413
        ) from None
    except (UnidentifiedImageError, OSError, ValueError):
        raise RequestError(f"{where} is not a JPEG, PNG or WebP image") from None
    if image.format not in IMAGE_FORMATS:
        raise RequestError(f"{where} is a {image.format} image; send JPEG, PNG or WebP")
    _check_frame_pixels(where, *image.size, limits)
    return image


def _pixels(image: Any, where: str) -> torch.Tensor:
    """uint8 `C x H x W` of an opened image."""
    try:
        array = np.asarray(image.convert("RGB"))
    except (OSError, ValueError, SyntaxError) as err:
        raise RequestError(f"{where} cannot be decoded ({err})") from None
    return torch.from_numpy(array.copy()).permute(2, 0, 1)


def _frames(payload: str, kind: str, limits: ServeLimits) -> torch.Tensor:
    """uint8 `T x C x H x W` of comma-separated base64 images, all headers checked first."""
    chunks = payload.split(",")
    if len(chunks) > limits.max_frames:
        raise _too_large(
            f"the frame count of {kind}", len(chunks), limits.max_frames, "--max-frames-per-request"
        )
    images = [
        _open_image(_b64(chunk, kind, n), f"{kind} frame {n}", limits)
        for n, chunk in enumerate(chunks, start=1)
    ]
    if len({image.size for image in images}) > 1:
        raise RequestError(f"{kind}: frames differ in size; send frames of one size")
    total = len(images) * images[0].size[0] * images[0].size[1]
    if total > limits.max_request_pixels:
        raise _too_large(
            f"frames x pixels of {kind}", total, limits.max_request_pixels, "--max-request-pixels"
        )
    return torch.stack([_pixels(image, f"{kind} frame {n}") for n, image in enumerate(images, 1)])


def _timed(frames: torch.Tensor, request: ChatRequest, time_encoding: str) -> DecodedVideo:
    """Per-frame images with their timing from `video_metadata[0]` / `mm_processor_kwargs`,
    handed to the processor as the served model was trained (`time_encoding`)."""
    count = int(frames.shape[0])
    metadata = request.video_metadata[0] if request.video_metadata else None
    kwargs_fps = request.mm_processor_kwargs.fps if request.mm_processor_kwargs else None
    fps = (metadata.fps if metadata else None) or kwargs_fps or DEFAULT_FPS
    timestamps = tuple((metadata and metadata.timestamps) or [i / fps for i in range(count)])
    source_fps = (metadata.source_fps if metadata else None) or fps
    indices = tuple(
        (metadata and metadata.frame_indices) or [round(t * source_fps) for t in timestamps]
    )
    if len(timestamps) != count or len(indices) != count:
        raise RequestError(
            f"video_metadata[0] has {len(timestamps)} timestamps and {len(indices)} frame "
            f"indices for {count} frames; send one per frame"
        )
    height, width = int(frames.shape[2]), int(frames.shape[3])
    meta = VideoMeta(
        source_fps=source_fps,
        duration=(metadata.duration if metadata else None) or count / fps,
        frame_indices=indices,
        timestamps=timestamps,
        fps=fps,
        width=width,
        height=height,
        source_width=width,
        source_height=height,
        time_encoding=time_encoding,
    )
    return DecodedVideo(frames=frames, meta=meta)


def _probe(path: Path, config: VideoConfig, limits: ServeLimits) -> None:
    """Check a container's frame size and planned frames x pixels before decoding it."""
    import av

    try:
        with av.open(str(path)) as container:
            stream = container.streams.video[0]
            width, height = stream.codec_context.width, stream.codec_context.height
            count, fps = int(stream.frames or 0), float(stream.average_rate or 0)
    except (av.FFmpegError, IndexError, ValueError, OSError):
        raise RequestError("video_url holds no decodable video stream; send an MP4") from None
    _check_frame_pixels("a video_url frame", width, height, limits)
    if count and fps > 0:
        planned = len(
            plan_frame_indices(
                count,
                fps,
                fps=config.fps,
                min_frames=config.min_frames,
                max_frames=config.max_frames,
            )[0]
        )
        if planned * width * height > limits.max_request_pixels:
            raise _too_large(
                "frames x pixels of the video_url",
                planned * width * height,
                limits.max_request_pixels,
                "--max-request-pixels",
            )


def _decode_file(path: Path, config: VideoConfig, limits: ServeLimits, label: str) -> DecodedVideo:
    _probe(path, config, limits)
    try:
        return decode_video(path, config)
    except MediaError as err:
        raise RequestError(f"{label}: {str(err).replace(str(path), 'the video')}") from None


def _container(data: bytes, request: ChatRequest, policy: MediaPolicy) -> DecodedVideo:
    """Decode an MP4 (or other container) sent inline, sampled with the server's settings."""
    kwargs = request.mm_processor_kwargs
    if request.video_metadata or (kwargs and kwargs.do_sample_frames is False):
        raise RequestError(
            "video_metadata and do_sample_frames=false describe per-frame images; an MP4 is "
            "sampled by the server (set mm_processor_kwargs.fps to change its rate)"
        )
    config = policy.video
    if kwargs and kwargs.fps:
        config = dataclasses.replace(config, fps=kwargs.fps)
    with tempfile.NamedTemporaryFile(suffix=".mp4") as handle:
        handle.write(data)
        handle.flush()
        return _decode_file(Path(handle.name), config, policy.limits, "video_url")


def video_of(part: VideoPart, request: ChatRequest, policy: MediaPolicy) -> DecodedVideo:
    """The decoded video of a `video_url` part."""
    url = part.video_url.url
    if url.startswith("data:"):
        mime, payload = _data_url(url, "video_url")
        if mime in FRAME_MIMES:
            frames = _frames(payload, "video_url", policy.limits)
            return _timed(frames, request, policy.video.time_encoding)
        if not mime.startswith("video/"):
            raise RequestError(f"video_url has type {mime!r}; send video/mp4 or video/jpeg frames")
        return _container(_b64(payload, "video_url"), request, policy)
    _refuse_remote(url, "video_url")
    path = _local_path(url, "video_url", policy.media_root)
    if is_image_path(path):
        return _image_file(path, policy)
    return _decode_file(path, policy.video, policy.limits, f"video_url {path.name}")


def image_of(part: ImagePart, policy: MediaPolicy) -> DecodedVideo:
    """The one-frame `DecodedVideo` of an `image_url` part."""
    url = part.image_url.url
    if url.startswith("data:"):
        mime, payload = _data_url(url, "image_url")
        if not mime.startswith("image/"):
            raise RequestError(f"image_url has type {mime!r}; send image/jpeg or image/png")
        if "," in payload:
            raise RequestError("image_url holds several images; send one")
        return _timed_image(_frames(payload, "image_url", policy.limits)[0])
    _refuse_remote(url, "image_url")
    return _image_file(_local_path(url, "image_url", policy.media_root), policy)


def _image_file(path: Path, policy: MediaPolicy) -> DecodedVideo:
    _open_image(path.read_bytes(), f"image {path.name}", policy.limits)
    return load_image(path, policy.video)


def _timed_image(frame: torch.Tensor) -> DecodedVideo:
    meta = VideoMeta.still(width=int(frame.shape[2]), height=int(frame.shape[1]))
    return DecodedVideo(frames=frame[None], meta=meta)


def _refuse_remote(url: str, kind: str) -> None:
    scheme = urllib.parse.urlsplit(url).scheme.lower()
    if scheme in ("http", "https", "ftp", "s3", "gs"):
        raise RequestError(
            f"{kind}: this server does not fetch remote URLs ({scheme}://); send the media as "
            "a data URL (data:video/mp4;base64,...) or a path under --media-root"
        )
    if scheme not in ("", "file") and len(scheme) > 1:  # one letter: a Windows drive
        raise RequestError(f"{kind}: unsupported URL scheme {scheme!r}; send a data URL")
