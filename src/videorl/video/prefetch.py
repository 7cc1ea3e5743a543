"""Prefetch: decode the next step's media in worker processes while this step computes
(`data.prefetch_workers`, docs/long_videos.md).

`Prefetcher.ahead(records)` hands each record's media (files only; inline frames are in
memory already) that the cache does not hold to a pool of `N` worker processes, which run
the cache's own decode (`decode_media`: the same function, config and sampling, so the same
frames); `VideoCache.get` then takes a prefetched video from its future instead of decoding
it. Nothing else changes: the step's prompts, rollouts and metrics are those of a run without
prefetch, and a video prefetched for a batch that dynamic sampling's refills consumed
differently is dropped after two rounds. Workers are spawned (not forked: the trainer's
threads and CUDA state are not safe to fork) with one torch thread each.
"""

from __future__ import annotations

import multiprocessing
import weakref
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor

from videorl.video.cache import VideoCache, decode_media
from videorl.video.media import MediaRef


def _init_worker() -> None:
    import torch

    torch.set_num_threads(1)  # decoding is one stream per worker; N workers use N cores


class Prefetcher:
    """Decodes media ahead into `cache` with `workers` processes."""

    def __init__(self, cache: VideoCache, workers: int) -> None:
        self.cache = cache
        context = multiprocessing.get_context("spawn")
        self.pool = ProcessPoolExecutor(workers, mp_context=context, initializer=_init_worker)
        self.round = 0
        self._close = weakref.finalize(self, self.pool.shutdown, wait=False, cancel_futures=True)

    def ahead(self, media: Iterable[MediaRef | None]) -> int:
        """Start decoding each of `media` the cache holds neither decoded nor in flight;
        returns how many were started. Drops what was prefetched two rounds ago and not used."""
        self.round += 1
        self.cache.drop_ahead(before=self.round - 1)
        started = 0
        for item in media:
            if item is None or item.frames is not None:
                continue
            key = self.cache.key(item)
            if self.cache.needs(key):
                future = self.pool.submit(decode_media, item, self.cache.config)
                self.cache.add_ahead(key, future, self.round)
                started += 1
        return started

    def close(self) -> None:
        self._close()
