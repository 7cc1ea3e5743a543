"""An embedding index of a video's frames, for frame retrieval by a text query
(`seek_video_frames`, `tools/timesearch.py`; docs/tools.md#seek_video_frames-timesearch-r).

TimeSearch-R (Time-Search/TimeSearch-R) caches each video's frames at 2 fps
(`scripts/converts/prepare_frame_cache.py --target_fps 2`) and their SigLIP image features
(`prepare_feature_cache.py`, google/siglip-so400m-patch14-384 behind a clip-as-service
server); a query's text feature is compared with them (`utils/key_frame_selector_v2.py`).

Here the index is built on a video's first search: its frames at `rollout.frame_search.fps`
(at most `max_frames`) are embedded, kept in memory, and written to
`<trainer.output_dir>/frame_index/<key>.pt` (the oldest files removed beyond `cache_mb`),
so a later run, step or rank reads them back instead of embedding again. The key names the
media (file, size and modification time, or inline frames), the row's clip, the video
control (the index holds the frames the control shows, so a search under a control finds
what the controlled video shows) and the embedder. Embedders:

- `colors`: a deterministic stand-in for the synthetic videos (`data/synth_scene.py`): a
  frame's vector is the share of its pixels near each named colour, a query's the colours
  it names (a query that names none is an error shown to the model);
- `hf:<path>`: a CLIP/SigLIP checkpoint (`get_image_features`, `get_text_features`), as
  TimeSearch-R's SigLIP server, loaded once per process.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Protocol

import torch

from videorl.config import FrameSearchConfig
from videorl.data.synth_scene import COLORS
from videorl.rollout.tools.registry import ToolContext, ToolError
from videorl.rollout.tools.video import _controlled_clip, _decode, tool_config, video_span
from videorl.video.controls import TEMPORAL, apply_control

MEMORY_INDEXES = 64  # indexes kept in memory per process (most recent)
COLOR_DISTANCE = 60.0  # a pixel within this RGB distance of a named colour counts as it
INDEX_PIXELS = {"colors": 64 * 64, "hf": 384 * 384}  # pixels of an indexed frame at most


class Embedder(Protocol):
    name: str

    def frames(self, frames: torch.Tensor) -> torch.Tensor:
        """`[N, C, H, W]` uint8 -> `[N, D]` L2-normalised (zero rows allowed)."""
        ...

    def text(self, query: str) -> torch.Tensor:
        """`[D]` L2-normalised; `ToolError` for a query it cannot embed."""
        ...


def _normalise(x: torch.Tensor) -> torch.Tensor:
    return x / x.norm(dim=-1, keepdim=True).clamp_min(1e-12)


class ColorEmbedder:
    """Shares of the named colours (`data/synth_scene.COLORS`): the stand-in of the CPU recipe."""

    name = "colors"

    def __init__(self) -> None:
        self.names = tuple(COLORS)
        self.palette = torch.tensor([COLORS[c] for c in self.names], dtype=torch.float32)

    def frames(self, frames: torch.Tensor) -> torch.Tensor:
        pixels = frames.permute(0, 2, 3, 1).reshape(frames.shape[0], -1, 3).float()
        distance = torch.cdist(pixels, self.palette[None].expand(len(frames), -1, -1))
        share = (distance < COLOR_DISTANCE).float().mean(dim=1)  # [N, colours]
        return _normalise(share)

    def text(self, query: str) -> torch.Tensor:
        words = set(re.findall(r"[a-z]+", query.lower()))
        named = torch.tensor([float(c in words) for c in self.names])
        if not named.any():
            raise ToolError(
                "the frame index cannot read that query: name a colour to look for "
                f"({', '.join(self.names)})"
            )
        return _normalise(named)


class HFEmbedder:
    """A CLIP/SigLIP checkpoint's image and text features (TimeSearch-R: SigLIP so400m)."""

    def __init__(self, path: str) -> None:
        from transformers import AutoModel, AutoProcessor

        self.name = f"hf:{path}"
        self.model = AutoModel.from_pretrained(path).eval()
        self.processor = AutoProcessor.from_pretrained(path)

    @torch.no_grad()
    def frames(self, frames: torch.Tensor) -> torch.Tensor:
        out = []
        for chunk in frames.split(32):
            inputs = self.processor(images=list(chunk), return_tensors="pt")
            out.append(
                _features(self.model.get_image_features(pixel_values=inputs["pixel_values"]))
            )
        return _normalise(torch.cat(out).float())

    @torch.no_grad()
    def text(self, query: str) -> torch.Tensor:
        inputs = self.processor(text=[query], return_tensors="pt", padding="max_length")
        found = _features(self.model.get_text_features(input_ids=inputs["input_ids"]))
        return _normalise(found[0].float())


def _features(out: Any) -> torch.Tensor:
    """The projected features: a tensor (transformers 4) or the output's `pooler_output`
    (transformers 5 returns a `BaseModelOutputWithPooling`)."""
    return out if isinstance(out, torch.Tensor) else out.pooler_output


@cache
def embedder(name: str) -> Embedder:
    """The embedder `rollout.frame_search.embedder` names (built once per process)."""
    return ColorEmbedder() if name == "colors" else HFEmbedder(name.removeprefix("hf:"))


@dataclass(frozen=True)
class FrameIndex:
    """A video's indexed frames: their times (seconds of the original video) and embeddings."""

    times: torch.Tensor  # [N] float64
    embeddings: torch.Tensor  # [N, D] float32, L2-normalised (zero rows: nothing to match)


class FrameIndexStore:
    """Indexes by video: in memory (the latest `MEMORY_INDEXES`) and on disk under `folder`
    (None: memory only), at most `settings.cache_mb` there. `built` counts the videos
    embedded, `loaded` those read back from disk."""

    def __init__(self, settings: FrameSearchConfig, folder: Path | None = None) -> None:
        self.settings = settings
        self.folder = folder
        self._memory: OrderedDict[str, FrameIndex] = OrderedDict()
        self.built = 0
        self.loaded = 0

    @property
    def embedder(self) -> Embedder:
        return embedder(self.settings.embedder)

    def get(self, ctx: ToolContext) -> FrameIndex:
        key = self.key(ctx)
        found = self._memory.get(key)
        if found is None:
            found = self._read(key)
        if found is None:
            found = self._build(ctx)
            self.built += 1
            self._write(key, found)
        self._memory[key] = found
        self._memory.move_to_end(key)
        while len(self._memory) > MEMORY_INDEXES:
            self._memory.popitem(last=False)
        return found

    def key(self, ctx: ToolContext) -> str:
        media, video = ctx.media, ctx.video
        assert media is not None and video is not None
        if media.frames is not None:
            ident: Sequence[Any] = ("inline", hashlib.sha1(media.frames.tobytes()).hexdigest())
        else:
            assert media.path is not None
            stat = os.stat(media.path)
            ident = (os.path.abspath(media.path), stat.st_size, stat.st_mtime_ns)
        s = self.settings
        parts = (*ident, video.meta.clip_start, video.meta.duration, ctx.control, ctx.control_key)
        parts += (s.embedder, s.fps, s.max_frames)
        return hashlib.sha1(repr(parts).encode()).hexdigest()[:24]

    def _build(self, ctx: ToolContext) -> FrameIndex:
        lo, hi = video_span(ctx)
        kind = "colors" if self.settings.embedder == "colors" else "hf"
        config = tool_config(
            ctx,
            fps=self.settings.fps,
            min_frames=1,
            max_frames=self.settings.max_frames,
            max_pixels=INDEX_PIXELS[kind],
            min_pixels=min(ctx.config.min_pixels, INDEX_PIXELS[kind]),
            total_pixels=self.settings.max_frames * INDEX_PIXELS[kind],
        )
        clip = _controlled_clip(ctx, _decode(ctx, lo, hi, config))
        if ctx.control is not None and ctx.control not in TEMPORAL:  # blank: index what it shows
            clip = apply_control(clip, ctx.control, ctx.control_key)
        times = torch.tensor(
            [clip.meta.clip_start + t for t in clip.meta.timestamps], dtype=torch.float64
        )
        return FrameIndex(times, self.embedder.frames(clip.frames))

    def _path(self, key: str) -> Path | None:
        return None if self.folder is None else self.folder / f"{key}.pt"

    def _read(self, key: str) -> FrameIndex | None:
        path = self._path(key)
        if path is None or not path.is_file():
            return None
        try:
            saved = torch.load(path, weights_only=True)
            found = FrameIndex(saved["times"], saved["embeddings"])
        except (OSError, RuntimeError, KeyError, EOFError):
            return None  # a torn or foreign file: build the index again
        self.loaded += 1
        return found

    def _write(self, key: str, index: FrameIndex) -> None:
        path = self._path(key)
        if path is None or self.settings.cache_mb <= 0:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        torch.save({"times": index.times, "embeddings": index.embeddings}, partial)
        os.replace(partial, path)  # readers never see half a file
        self._evict()

    def _evict(self) -> None:
        """Remove the oldest cached indexes until the folder fits in `cache_mb`."""
        assert self.folder is not None
        files = sorted(self.folder.glob("*.pt"), key=lambda p: p.stat().st_mtime_ns)
        total = sum(p.stat().st_size for p in files)
        budget = self.settings.cache_mb * 1024**2
        for old in files[:-1]:  # the newest stays, whatever its size
            if total <= budget:
                break
            total -= old.stat().st_size
            old.unlink(missing_ok=True)


_STORE = FrameIndexStore(FrameSearchConfig())


def configure(settings: FrameSearchConfig, folder: Path | None) -> FrameIndexStore:
    """Use `settings`, caching under `folder`, for this process's searches (the trainer
    calls it with `<trainer.output_dir>/frame_index`); returns the new store."""
    global _STORE
    _STORE = FrameIndexStore(settings, folder)
    return _STORE


def store() -> FrameIndexStore:
    return _STORE
