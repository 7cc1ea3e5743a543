"""Prefetch (videorl.video.prefetch): media decoded ahead in a worker process answer the
cache's next lookups with the frames a decode in the step gives, counted as one decode; what
is never asked for is dropped after two rounds."""

from __future__ import annotations

import numpy as np
import torch

from videorl.video.cache import VideoCache
from videorl.video.encode import write_image
from videorl.video.media import MediaRef
from videorl.video.prefetch import Prefetcher


def test_prefetched_media_are_the_decoded_media(make_video, native, tmp_path):
    image = write_image(tmp_path / "a.png", np.full((20, 30, 3), 90, np.uint8))
    media = [
        MediaRef(path=str(make_video(6.0, name="a.mp4"))),
        MediaRef(path=str(make_video(4.0, name="b.mp4")), start=1.0, end=3.0),
        MediaRef(path=str(image)),
    ]
    inline = MediaRef(frames=np.zeros((4, 8, 8, 3), np.uint8), fps=2.0)
    cache, plain = VideoCache(native), VideoCache(native)
    prefetch = Prefetcher(cache, workers=1)
    try:
        assert prefetch.ahead([*media, inline, None]) == 3  # inline frames are in memory
        assert prefetch.ahead(media) == 0  # in flight already
        for m in media:
            ahead, here = cache.get(m), plain.get(m)
            assert ahead.meta == here.meta and torch.equal(ahead.frames, here.frames)
        assert cache.decode_count == plain.decode_count == 3 and not cache._ahead
        assert prefetch.ahead(media) == 0  # cached
        unused = MediaRef(path=str(make_video(2.0, name="c.mp4")))
        assert prefetch.ahead([unused]) == 1
        prefetch.ahead([])
        assert cache._ahead  # one round later: still kept for the step that may use it
        prefetch.ahead([])
        assert not cache._ahead and cache.decode_count == 3
    finally:
        prefetch.close()
