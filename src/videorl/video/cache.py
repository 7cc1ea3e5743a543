"""Decode once: a cache of decoded videos shared by every stage of a step
(docs/methods.md#video-contract).

The key is (file identity, clip, sampling parameters): `realpath`, size and mtime of the
file (so an edited file is decoded again), the clip `[start, end)` and
`VideoConfig.sampling_key()`. Inline frames are keyed by a hash of their bytes and fps.
Lookups go memory (LRU bounded by `cache_bytes`) -> disk (`cache_dir`, optional) -> a decode
started ahead (`videorl.video.prefetch`, whose result is waited for) -> decode.
`decode_count` counts real decodes (those done ahead when they are used); `hits` memory hits;
`disk_hits` disk loads. Thread-safe: concurrent lookups of one key decode it once.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections import OrderedDict
from concurrent.futures import Future
from dataclasses import asdict
from pathlib import Path
from typing import Any, Protocol, cast

import numpy as np
import torch

from videorl.errors import MediaError, fix
from videorl.video.decode import (
    DecodedVideo,
    VideoConfig,
    decode_video,
    frames_from_array,
    is_image_path,
    load_image,
)
from videorl.video.media import MediaRef
from videorl.video.meta import VideoMeta

logger = logging.getLogger(__name__)


def decode_media(media: MediaRef, config: VideoConfig) -> DecodedVideo:
    """Decode `media` under `config`, uncached: inline frames, an image (by its extension) or
    a video file (its clip, if any)."""
    if media.frames is not None:
        return frames_from_array(media.frames, media.fps, config, media.start, media.end)
    # MediaRef.__post_init__ requires a path or frames: without frames, path is a str.
    path = cast(str, media.path)
    if is_image_path(path):
        return load_image(path, config)
    return decode_video(path, config, media.start, media.end)


class MediaSource(Protocol):
    """What prompts read their media through: a `VideoCache`, or a view of one (a control)."""

    def get(self, media: MediaRef) -> DecodedVideo: ...


class VideoCache:
    """`get(media) -> DecodedVideo`, decoding each distinct (media, sampling) key once."""

    def __init__(self, config: VideoConfig) -> None:
        self.config = config
        self.decode_count = 0
        self.hits = 0
        self.disk_hits = 0
        self._entries: OrderedDict[str, DecodedVideo] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self._key_locks: dict[str, threading.Lock] = {}
        self._ahead: dict[str, tuple[Future[DecodedVideo], int]] = {}  # key -> (decode, round)
        self._dir = Path(config.cache_dir) if config.cache_dir else None
        if self._dir is not None:
            self._dir.mkdir(parents=True, exist_ok=True)

    # ----- public ---------------------------------------------------------------------------

    def get(self, media: MediaRef) -> DecodedVideo:
        """Frames and metadata of `media` (a video path with optional clip, an image path
        by extension, or inline frames), decoded at most once while cached."""
        key = self.key(media)
        with self._lock:
            found = self._lookup(key)
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        if found is not None:
            return found
        with key_lock:  # a second thread asking for the same key waits for the first
            try:
                with self._lock:
                    found = self._lookup(key)
                if found is not None:
                    return found
                video = self._load_disk(key)
                if video is None:
                    video = self._decode(media, self._take_ahead(key))
                    self._save_disk(key, video)
                with self._lock:
                    self._insert(key, video)
                return video
            finally:
                with self._lock:
                    self._key_locks.pop(key, None)

    def key(self, media: MediaRef) -> str:
        """Hex digest of (file identity or frame bytes, clip, sampling parameters)."""
        if media.frames is not None:
            array = np.ascontiguousarray(np.asarray(media.frames))
            identity: Any = (
                "inline",
                hashlib.sha1(array.tobytes()).hexdigest(),
                array.shape,
                media.fps,
            )
        else:
            path = str(media.path)
            try:
                stat = os.stat(path)
            except OSError:
                # Missing files get a key too; decoding will raise the MediaError.
                identity = ("missing", os.path.abspath(path))
            else:
                identity = (os.path.realpath(path), stat.st_size, stat.st_mtime_ns)
        material = repr((identity, media.start, media.end, self.config.sampling_key()))
        return hashlib.sha256(material.encode()).hexdigest()

    @property
    def cached_bytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)

    def stats(self) -> dict[str, int]:
        """Counters for the metrics sink."""
        return {
            "video/decodes": self.decode_count,
            "video/cache_hits": self.hits,
            "video/disk_hits": self.disk_hits,
            "video/cached_bytes": self._bytes,
        }

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0

    # ----- decodes started ahead (videorl.video.prefetch) -------------------------------------

    def needs(self, key: str) -> bool:
        """Whether `key` is neither in memory, nor on disk, nor being decoded ahead."""
        path = self._disk_path(key)
        with self._lock:
            held = key in self._entries or key in self._ahead
        return not held and (path is None or not path.exists())

    def add_ahead(self, key: str, decode: Future[DecodedVideo], round_: int) -> None:
        """`decode` (started ahead in round `round_`) will answer the first `get` of `key`."""
        with self._lock:
            self._ahead[key] = (decode, round_)

    def drop_ahead(self, before: int) -> None:
        """Forget the decodes started ahead before round `before` and never asked for."""
        with self._lock:
            for key in [k for k, (_, r) in self._ahead.items() if r < before]:
                self._ahead.pop(key)[0].cancel()

    def _take_ahead(self, key: str) -> Future[DecodedVideo] | None:
        with self._lock:
            found = self._ahead.pop(key, None)
        return None if found is None else found[0]

    # ----- memory -----------------------------------------------------------------------------

    def _lookup(self, key: str) -> DecodedVideo | None:
        video = self._entries.get(key)
        if video is not None:
            self._entries.move_to_end(key)
            self.hits += 1
        return video

    def _insert(self, key: str, video: DecodedVideo) -> None:
        if video.nbytes > self.config.cache_bytes:
            logger.warning(
                "decoded video of %d bytes exceeds video.cache_bytes=%d; it will be decoded "
                "again on every use, %s",
                video.nbytes,
                self.config.cache_bytes,
                fix("raise video.cache_bytes"),
            )
            return
        self._entries[key] = video
        self._bytes += video.nbytes
        while self._bytes > self.config.cache_bytes:
            _, evicted = self._entries.popitem(last=False)
            self._bytes -= evicted.nbytes

    # ----- decode and disk --------------------------------------------------------------------

    def _decode(self, media: MediaRef, ahead: Future[DecodedVideo] | None = None) -> DecodedVideo:
        with self._lock:  # counters are shared by threads decoding different keys
            self.decode_count += 1
        if ahead is not None and not ahead.cancelled():
            return ahead.result()  # a MediaError of the worker's decode is raised here
        return decode_media(media, self.config)

    def _disk_path(self, key: str) -> Path | None:
        return None if self._dir is None else self._dir / f"{key}.pt"

    def _load_disk(self, key: str) -> DecodedVideo | None:
        path = self._disk_path(key)
        if path is None or not path.exists():
            return None
        try:
            stored = torch.load(path, weights_only=True)
            # the fields asdict(meta) wrote (_save_disk); a list read back becomes a tuple
            fields: dict[str, Any] = {
                k: tuple(v) if isinstance(v, list) else v for k, v in stored["meta"].items()
            }
            meta = VideoMeta(**fields)
            video = DecodedVideo(frames=stored["frames"], meta=meta)
        except Exception as err:  # noqa: BLE001 (a damaged cache file is re-decoded, never fatal)
            logger.warning("ignoring unreadable video cache file %s: %s", path, err)
            return None
        with self._lock:
            self.disk_hits += 1
        return video

    def _save_disk(self, key: str, video: DecodedVideo) -> None:
        path = self._disk_path(key)
        if path is None:
            return
        tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            torch.save({"frames": video.frames, "meta": asdict(video.meta)}, tmp)
            os.replace(tmp, path)  # atomic, so readers in other processes never see half
        except OSError as err:
            tmp.unlink(missing_ok=True)
            raise MediaError(
                f"cannot write the video cache file {path}: {err}; free disk space or unset "
                "video.cache_dir"
            ) from err
