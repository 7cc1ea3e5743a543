"""A short self-supervised warm-up of a random vision tower: a stand-in for the pretrained
encoder every real vision-language model starts from.

A random tiny tower's output barely moves with the frame's content (an event's visual
tokens differ from an empty frame's by 0.14 on a norm of 0.44), and a language model does
not learn to find an event in such features within a CPU budget, although it learns the
same task in a few hundred steps when the features are distinct (docs/lab/models-that-see.md).
Real towers (ViT, SigLIP) come pretrained; this gives the tiny one the same property without
any task label: the tower learns to write, into each merged visual token, standardised
image statistics of the clip's clean content,

    target(token) = scale * Q @ [z(local colours), z(pair mean, pair std), w * z(pair contrast)]

- local colours: the mean RGB of each of the token's M x M patches in each of its T frames;
- pair mean / std: per channel, over all pixels of the token's frame pair (global context,
  as a ViT's attention gives every token);
- pair contrast: the channel-mean of that std, weighted by `w` (`contrast_weight`): large
  whenever something stands out of the background, whatever its colour;
- z(.) standardises each statistic over the warm-up clips; Q is a fixed random map with
  orthonormal columns into the language model's width (seeded), so the loss is a plain MSE.

The clips are broad and generic (`data/synth_clips.py`): textured, scrolling backgrounds,
camera sway, sensor noise, 1-6 shapes of many sizes that appear, move and change colour,
brightness changes, several frame sizes and motion rates; no task, question or answer.
The tower sees the clip as observed; the statistics are computed on the same clip's clean
content (the shapes and brightness over the background's mean colour, no texture, no
noise). So frames that differ in content get different targets, and frames that differ
only in nuisance get the same one: the invariance that real video encoders learn from
augmented views (SimCLR/DINO-style views, V-JEPA's feature prediction, VideoMAE's masked
reconstruction), with a fixed analytic target instead of a learned one, which cannot
collapse and needs no large batch: what a CPU budget allows.
Only the vision tower (blocks and merger) trains; the language model is untouched.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from videorl.data.synth_clips import CLIP_KINDS
from videorl.models.inputs import hf_video_metadata, video_processor_kwargs
from videorl.video.decode import VideoConfig, frames_from_array

CLIP_FPS = 2.0


@dataclass(frozen=True)
class WarmupSettings:
    steps: int = 150
    lr: float = 3e-3
    clips: int = 128  # distinct clips, drawn with replacement per step
    kind: str = "shape"  # data/synth_clips.py CLIP_KINDS: shape (the quickstart's) | broad
    clips_per_step: int = 8
    scale: float = 0.07  # target size: an event's tokens end ~1 from the background's
    contrast_weight: float = 6.0
    frames: tuple[int, int] = (8, 32)  # frames per clip (even), sampled at CLIP_FPS
    min_pixels: int = 3136
    max_pixels: int = 12544
    seed: int = 0


@dataclass(frozen=True)
class WarmupReport:
    steps: int
    first_loss: float
    last_loss: float
    seconds: float


def encode_clip(processor: Any, frames: np.ndarray, settings: WarmupSettings) -> dict[str, Any]:
    """The tower's inputs for `frames`, resized and sampled as a video file would be."""
    config = VideoConfig(
        fps=CLIP_FPS,
        min_frames=2,
        max_frames=settings.frames[1],
        min_pixels=settings.min_pixels,
        max_pixels=settings.max_pixels,
    )
    video = frames_from_array(frames, CLIP_FPS, config)
    encoded = processor.video_processor(
        videos=[video.frames],
        video_metadata=[hf_video_metadata(video.meta, int(video.frames.shape[0]))],
        do_sample_frames=False,
        return_tensors="pt",
        **video_processor_kwargs(processor),
    )
    return {"pixels": encoded["pixel_values_videos"], "grid": encoded["video_grid_thw"]}


def image_statistics(pixels: torch.Tensor, grid: torch.Tensor, vision_config: Any) -> torch.Tensor:
    """Per merged token: [local colours, pair mean, pair std, pair contrast] (see module doc).
    `pixels` rows are patches (C x T x P x P) in merge-window order, frame pair by pair."""
    merge, temporal = vision_config.spatial_merge_size, vision_config.temporal_patch_size
    patch = vision_config.patch_size
    x = pixels.float().view(-1, merge * merge, 3, temporal, patch * patch)
    local = x.mean(-1).flatten(1)
    t, h, w = (int(v) for v in grid[0])
    per_pair = h * w // (merge * merge)
    pair = x.view(t, per_pair * merge * merge, 3, temporal, patch * patch).transpose(1, 2)
    pair = pair.flatten(2)
    std = pair.std(-1)
    stats = torch.cat([pair.mean(-1), std, std.mean(1, keepdim=True)], 1)
    return torch.cat([local, stats.repeat_interleave(per_pair, 0)], 1)


def tower_output(visual: torch.nn.Module, pixels: torch.Tensor, grid: torch.Tensor) -> torch.Tensor:
    """The merged visual tokens the language model receives."""
    out = visual(pixels, grid_thw=grid)
    pooled = getattr(out, "pooler_output", None)
    if pooled is not None:
        return pooled
    return out[0] if isinstance(out, tuple) else out


def warm_up_vision(model: Any, processor: Any, settings: WarmupSettings) -> WarmupReport:
    """Train `model`'s vision tower in place on the statistics targets (module doc)."""
    started = time.perf_counter()
    rng = np.random.default_rng(settings.seed)
    clips, stats = [], []
    visual = model.model.visual
    for _ in range(settings.clips):
        observed, clean = CLIP_KINDS[settings.kind](rng, settings.frames)
        clips.append(encode_clip(processor, observed, settings))
        target = encode_clip(processor, clean, settings)
        stats.append(image_statistics(target["pixels"], target["grid"], visual.config))
    every = torch.cat(stats)
    mean, std = every.mean(0), every.std(0).clamp_min(1e-6)
    weights = torch.ones(every.shape[1])
    weights[-1] = settings.contrast_weight
    width = int(model.config.get_text_config().hidden_size)
    if every.shape[1] > width:
        raise ValueError(f"vision warm-up needs a language width >= {every.shape[1]}, got {width}")
    generator = torch.Generator().manual_seed(settings.seed)
    q, _ = torch.linalg.qr(torch.randn(width, every.shape[1], generator=generator))
    targets = [settings.scale * ((s - mean) / std * weights) @ q.T for s in stats]

    optimizer = torch.optim.AdamW(visual.parameters(), lr=settings.lr, weight_decay=0.0)
    was_training = visual.training
    visual.train()
    losses: list[float] = []
    for _ in range(settings.steps):
        picks = rng.integers(len(clips), size=settings.clips_per_step)
        loss = sum(
            ((tower_output(visual, clips[i]["pixels"], clips[i]["grid"]) - targets[i]) ** 2)
            .sum(-1)
            .mean()
            for i in picks
        ) / len(picks)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(visual.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
    visual.train(was_training)
    return WarmupReport(
        steps=settings.steps,
        first_loss=losses[0] if losses else math.nan,
        last_loss=losses[-1] if losses else math.nan,
        seconds=time.perf_counter() - started,
    )
