"""`reward.sensitivity.shuffle: taro`: TaRO's boundary-shuffle law (issue 31, item 7e).

Published: oceanflowlab/TaRO `src/utils.py` lines 5-42 (`shuffle_boundary_frames`), called
with `time_radius=3` on the row's ground truth by `verl/workers/fsdp_workers.py` line 1076;
the frame indices are re-based to the first sampled frame by `src/vtg_dataset.py` lines
75-76. A frame's offset is `frames_indices - frames_indices[0]` in source frames (lines 7-8),
compared with `(gt -+ radius) * fps` inclusive (lines 10-24); the frames near the start are
permuted by `torch.randperm`, then those near the end (lines 27-40), so overlapping sets are
shuffled twice and a permutation may leave frames in place.
"""

from __future__ import annotations

import pytest
import torch

from videorl.api import resolve_config_path
from videorl.config import load_config
from videorl.errors import ConfigError
from videorl.rewards import RewardConfig, SensitivityConfig
from videorl.rewards.sensitivity import boundary_shuffle, taro_boundary_shuffle

# a 30 fps source sampled at 2 fps: source frames 0, 15, 30, ... (40 frames, 20 s)
INDICES = [15 * k for k in range(40)]
STAMPS = [k * 0.5 for k in range(40)]


def _published_steps(indices, fps, window, radius, seed):
    """The tensor operations of `shuffle_boundary_frames` on frame ids, with a seeded
    generator in place of the global one (lines 16-24 select, 31-36 shuffle)."""
    video = torch.arange(len(indices))
    offsets = torch.tensor(indices) - indices[0]
    generator = torch.Generator()
    generator.manual_seed(seed)
    for bound in window:
        near = torch.nonzero(
            (offsets >= (bound - radius) * fps) & (offsets <= (bound + radius) * fps)
        ).flatten()
        if len(near) < 2:
            continue
        perm = torch.randperm(len(near), generator=generator)
        video[near] = video[near[perm]]
    return video.tolist()


def test_sets_overlap_where_ours_split_them():
    # ground truth [5, 8] s, radius 3: near the start offsets 60..240 (frames 4..16, 13
    # frames), near the end 150..330 (frames 10..22, 13 frames): frames 10..16 are in both.
    # Ours splits them by the nearer boundary: 4..13 (t in [2, 6.5]) and 14..22.
    for seed in range(5):
        taro = taro_boundary_shuffle(INDICES, 30.0, (5.0, 8.0), 3.0, seed)
        assert taro == _published_steps(INDICES, 30.0, (5.0, 8.0), 3.0, seed)
        assert sorted(taro) == list(range(40))
        assert {k for k, p in enumerate(taro) if p != k} <= set(range(4, 23))
    ours = boundary_shuffle(STAMPS, (5.0, 8.0), 3.0, seed=0)
    assert {ours[k] for k in range(4, 14)} == set(range(4, 14))
    assert {ours[k] for k in range(14, 23)} == set(range(14, 23))
    # TaRO: a frame from before the overlap can end after it (moved twice)
    crossed = any(
        any(perm[k] < 10 for k in range(17, 23))
        for perm in (taro_boundary_shuffle(INDICES, 30.0, (5.0, 8.0), 3.0, s) for s in range(20))
    )
    assert crossed


def test_frames_may_stay_in_taros_law_never_in_ours():
    # two frames near a boundary: randperm(2) is the identity half of the time; our cyclic
    # permutation always swaps them
    indices, window = [0, 30, 60, 90, 120, 150, 180], (0.0, 5.5)  # radius 0.5 at 30 fps
    perms = [taro_boundary_shuffle(indices, 30.0, window, 0.5, s) for s in range(16)]
    assert list(range(7)) in perms
    stamps = [i / 30 for i in indices]
    assert all(boundary_shuffle(stamps, window, 0.5, seed=s) != list(range(7)) for s in range(16))


def test_times_count_from_the_first_sampled_frame():
    # a clip sampled from source frame 300 on: offsets 0, 15, ... as for the full video
    clip = [300 + i for i in INDICES]
    assert taro_boundary_shuffle(clip, 30.0, (5.0, 8.0), 3.0, 3) == taro_boundary_shuffle(
        INDICES, 30.0, (5.0, 8.0), 3.0, 3
    )
    # one frame near a boundary: nothing moves (lines 28-29)
    assert taro_boundary_shuffle([0, 60, 120], 30.0, (2.0, 4.0), 0.5, 0) == [0, 1, 2]


def test_config():
    assert SensitivityConfig().shuffle == "videorl"
    assert load_config(resolve_config_path("taro")).reward.sensitivity.shuffle == "taro"
    with pytest.raises(ConfigError, match="reward.sensitivity.shuffle.*'random'"):
        RewardConfig.from_dict({"sensitivity": {"shuffle": "random"}})
