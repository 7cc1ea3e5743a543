"""TaRO temporal-sensitivity reward (docs/methods.md#temporal-sensitivity-reward).

For each TG row the trainer runs the current policy (no grad) twice on the row's tokens, with
the original frames and with frames shuffled near the ground-truth boundaries, and takes
`d_i = mean over response tokens of (logp_orig - logp_shuffled)`. The bonus
`alpha * 1[d_i > thr_g + margin]` is added to row i's reward when its tIoU >= gate; `thr_g`
is the mean of d over row i's group (or a constant). Each row keeps its own d_i, as TaRO's
`verl/workers/fsdp_workers.py` (lines 1104-1118) does (an earlier TaRO revision shared one
value per group); TaRO's group mean assumes 8 contiguous rows (`view(-1, 8)`), ours uses
the group ids.

Two shuffle laws (`reward.sensitivity.shuffle`): `videorl` (`boundary_shuffle`: disjoint
start / end sets by timestamp, every frame moved) and `taro` (`taro_boundary_shuffle`: TaRO's
`shuffle_boundary_frames`, `src/utils.py` lines 5-42, as its recipe calls it).
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Sequence

import torch

from videorl.data.records import TaskRecord
from videorl.rewards.config import RewardConfig, SensitivityConfig


def applies_to(record: TaskRecord) -> bool:
    """TaRO scores temporal sensitivity on temporal-grounding queries only (its d_i needs a
    ground-truth window to shuffle around)."""
    return record.family.task.time_windows and record.video is not None


def shuffle_seed(step: int, row: int, base_seed: int = 0) -> int:
    """A seed for `boundary_shuffle` from (step, row): reproducible across runs and ranks,
    and unrelated between neighbouring rows."""
    digest = hashlib.blake2b(f"{base_seed}:{step}:{row}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def _derange(indices: list[int], rng: random.Random) -> list[int]:
    # Sattolo's algorithm: a uniformly random cyclic permutation, so every frame near the
    # boundary moves (a plain shuffle of 2 frames is the identity half of the time).
    out = list(indices)
    for i in range(len(out) - 1, 0, -1):
        j = rng.randrange(i)
        out[i], out[j] = out[j], out[i]
    return out


def boundary_shuffle(
    timestamps: Sequence[float], window: tuple[float, float], radius: float, seed: int
) -> list[int]:
    """A permutation `perm` of frame indices (shuffled frames = `frames[perm]`): the frames
    whose timestamps lie within +-`radius` s of the window start are permuted among
    themselves, likewise around the end; all others stay. A frame near both boundaries
    belongs to the nearer one (the start on a tie), so the two sets are disjoint."""
    if not (math.isfinite(radius) and radius >= 0):
        raise ValueError(f"radius={radius!r}: give a finite number of seconds >= 0")
    start, end = float(window[0]), float(window[1])
    near_start, near_end = [], []
    for index, stamp in enumerate(timestamps):
        to_start, to_end = abs(float(stamp) - start), abs(float(stamp) - end)
        if to_start <= radius and to_start <= to_end:
            near_start.append(index)
        elif to_end <= radius:
            near_end.append(index)
    rng = random.Random(seed)
    perm = list(range(len(timestamps)))
    for group in (near_start, near_end):
        for slot, source in zip(group, _derange(group, rng), strict=True):
            perm[slot] = source
    return perm


def taro_boundary_shuffle(
    frame_indices: Sequence[int],
    source_fps: float,
    window: tuple[float, float],
    radius: float,
    seed: int,
) -> list[int]:
    """TaRO's law (`src/utils.py: shuffle_boundary_frames`, lines 5-42) as a permutation
    `perm` (shuffled frames = `frames[perm]`). A frame's time is its source index minus the
    first sampled one, in source frames (lines 7-8); the frames within
    `[(s - radius) fps, (s + radius) fps]` (inclusive) are permuted by `torch.randperm`,
    then those around the end likewise (lines 10-24, 39-40). The two sets may overlap: a
    frame near both is moved twice. A set of fewer than 2 frames stays (lines 28-29); the
    permutation may leave frames in place. TaRO draws from the global torch generator; ours
    is seeded (`seed`)."""
    if not (math.isfinite(radius) and radius >= 0):
        raise ValueError(f"radius={radius!r}: give a finite number of seconds >= 0")
    first = int(frame_indices[0]) if len(frame_indices) else 0
    offsets = [int(i) - first for i in frame_indices]
    generator = torch.Generator()
    generator.manual_seed(seed % 2**63)
    perm = list(range(len(offsets)))
    for bound in (float(window[0]), float(window[1])):
        low, high = (bound - radius) * source_fps, (bound + radius) * source_fps
        near = [k for k, offset in enumerate(offsets) if low <= offset <= high]
        if len(near) < 2:
            continue
        order = torch.randperm(len(near), generator=generator).tolist()
        moved = [perm[near[j]] for j in order]  # tensor[idx] = tensor[idx[perm]]
        for slot, source in zip(near, moved, strict=True):
            perm[slot] = source
    return perm


@torch.no_grad()
def token_mean_logp_gap(
    logp_orig: torch.Tensor, logp_shuf: torch.Tensor, mask: torch.Tensor
) -> torch.Tensor:
    """`d_i = sum_t mask * (logp_orig - logp_shuf) / sum_t mask` per row ([B, T] -> [B],
    float32); a row without response tokens gives 0. Padding positions are excluded with
    `where`, not multiplied by 0, so that padded -inf log-probs cannot turn a row into NaN."""
    keep = mask.to(torch.bool)
    gap = logp_orig.to(torch.float32) - logp_shuf.to(torch.float32)
    gap = torch.where(keep, gap, torch.zeros_like(gap))
    return gap.sum(dim=-1) / keep.sum(dim=-1).clamp_min(1).to(torch.float32)


@torch.no_grad()
def sensitivity_bonus(
    d: torch.Tensor,
    group_ids: torch.Tensor,
    tiou: torch.Tensor,
    config: SensitivityConfig | RewardConfig,
) -> torch.Tensor:
    """`bonus_i = alpha * 1[d_i > thr_g + margin] * 1[tIoU_i >= gate]` ([B] -> [B], float32).

    `thr_g` is the mean of the finite d over row i's group (`threshold = "group_mean"`) or
    the constant `threshold`. A row with a non-finite d gets no bonus and is left out of its
    group's mean. Computed whatever `config.enabled` says (that flag gates the passes).
    `config` is the `SensitivityConfig` or the `RewardConfig` holding it.
    """
    if isinstance(config, RewardConfig):
        config = config.sensitivity
    d = d.to(torch.float32)
    valid = torch.isfinite(d)
    clean = torch.where(valid, d, torch.zeros_like(d))
    if config.threshold == "group_mean":
        groups, group = torch.unique(group_ids, return_inverse=True)
        group, size = group.to(d.device), groups.numel()
        sums = torch.zeros(size, dtype=torch.float32, device=d.device).index_add_(0, group, clean)
        counts = torch.zeros(size, dtype=torch.float32, device=d.device).index_add_(
            0, group, valid.to(torch.float32)
        )
        threshold = (sums / counts.clamp_min(1.0))[group]
    else:
        threshold = torch.full_like(d, float(config.threshold))
    gated = tiou.to(device=d.device, dtype=torch.float32) >= config.gate
    passed = valid & (d > threshold + config.margin) & gated
    return config.alpha * passed.to(torch.float32)
