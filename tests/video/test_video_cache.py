"""Decode once (videorl.video.cache)."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest
import torch

from videorl.data.records import MediaRef
from videorl.errors import MediaError
from videorl.video.cache import VideoCache
from videorl.video.decode import VideoConfig
from videorl.video.encode import write_image, write_mp4

from .conftest import index_frames


def small(**overrides) -> VideoConfig:
    return VideoConfig(**{"min_pixels": 4, "max_pixels": 64 * 64, "factor": 2, **overrides})


def test_repeated_lookups_decode_once(make_video):
    cache = VideoCache(small())
    media = MediaRef(path=str(make_video(3.0)))
    first = cache.get(media)
    for _ in range(9):
        assert cache.get(MediaRef(path=media.path)) is first
    assert cache.decode_count == 1 and cache.hits == 9


def test_a_training_step_decodes_each_distinct_video_once(make_video):
    """Rollout, log-probs, update and sensitivity passes over a batch whose rows share
    videos: one decode per distinct (video, clip)."""
    a, b = str(make_video(3.0, name="a.mp4")), str(make_video(4.0, name="b.mp4"))
    batch = [
        MediaRef(path=a),
        MediaRef(path=b),
        MediaRef(path=a),
        MediaRef(path=a, start=1.0, end=3.0),
    ]
    cache = VideoCache(small())
    for _stage in ("rollout", "old_logprobs", "update", "sensitivity"):
        for media in batch:
            cache.get(media)
    assert cache.decode_count == 3  # a, b, and the clip of a
    assert cache.hits == 4 * len(batch) - 3


def test_sampling_parameters_and_file_changes_make_new_keys(make_video):
    path = make_video(3.0)
    media = MediaRef(path=str(path))
    assert VideoCache(small()).key(media) != VideoCache(small(fps=1.0)).key(media)
    cache = VideoCache(small())
    before = cache.get(media)
    write_mp4(path, index_frames(32), 8)  # a 4 s video replaces the 3 s one
    os.utime(path, ns=(1, 1))
    after = cache.get(media)
    assert cache.decode_count == 2
    assert after.meta.duration == 4.0 and before.meta.duration == 3.0


def test_lru_respects_the_byte_budget(make_video):
    a, b = (
        MediaRef(path=str(make_video(2.0, name="a.mp4"))),
        MediaRef(path=str(make_video(2.0, name="b.mp4"))),
    )
    one_video = VideoCache(small()).get(a).nbytes
    cache = VideoCache(small(cache_bytes=one_video))
    cache.get(a), cache.get(b), cache.get(a)
    assert cache.decode_count == 3  # b evicted a, then a evicted b
    assert len(cache) == 1 and cache.cached_bytes <= one_video


def test_disk_store_survives_a_new_cache(make_video, tmp_path):
    media = MediaRef(path=str(make_video(3.0)), start=0.5, end=2.5)
    config = small(cache_dir=str(tmp_path / "cache"))
    first = VideoCache(config).get(media)
    second_cache = VideoCache(config)
    second = second_cache.get(media)
    assert second_cache.decode_count == 0 and second_cache.disk_hits == 1
    assert torch.equal(first.frames, second.frames) and first.meta == second.meta
    assert len(list((tmp_path / "cache").glob("*.pt"))) == 1


def test_damaged_disk_entry_is_decoded_again(make_video, tmp_path):
    media = MediaRef(path=str(make_video(2.0)))
    config = small(cache_dir=str(tmp_path / "cache"))
    VideoCache(config).get(media)
    (entry,) = (tmp_path / "cache").glob("*.pt")
    entry.write_bytes(b"garbage")
    cache = VideoCache(config)
    cache.get(media)
    assert cache.decode_count == 1 and cache.disk_hits == 0


def test_concurrent_lookups_decode_once(make_video):
    cache = VideoCache(small())
    media = MediaRef(path=str(make_video(3.0)))
    results = []
    threads = [threading.Thread(target=lambda: results.append(cache.get(media))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert cache.decode_count == 1 and all(r is results[0] for r in results)


def test_images_and_inline_frames(tmp_path):
    cache = VideoCache(small())
    image = write_image(tmp_path / "x.png", np.full((32, 48, 3), 99, np.uint8))
    assert cache.get(MediaRef(path=str(image))).meta.is_image
    frames = index_frames(16)
    one = cache.get(MediaRef(frames=frames, fps=8.0))
    two = cache.get(MediaRef(frames=frames.copy(), fps=8.0))  # same content, new array
    assert one is two and cache.decode_count == 2
    cache.get(MediaRef(frames=frames, fps=4.0))
    assert cache.decode_count == 3


def test_missing_media_raises_and_is_not_cached(tmp_path):
    cache = VideoCache(small())
    with pytest.raises(MediaError, match="not found"):
        cache.get(MediaRef(path=str(tmp_path / "gone.mp4")))
    assert len(cache) == 0
