"""T-GRPO: Video-R1's temporal contrast reward (Feng et al. 2025, arXiv 2503.21776).

Each prompt with a video also gets `n_shuffled` rollouts on the same frames in a random
order. With `p` the mean accuracy of the prompt's ordered group and `p~` that of its
shuffled group, every *correct* ordered response gets the bonus

    r_i <- r_i + alpha * 1[p >= mu * p~] * 1[acc_i > tau]

(mu = `margin` 0.8, alpha = `bonus` 0.3, tau = `correct_threshold` 0.1). The shuffled
rollouts are only measured: they never enter the loss.

Source: tulerfeng/Video-R1 `src/r1-v/src/open_r1/trainer/grpo_trainer.py` (`compute_loss`;
the same code in `vllm_grpo_trainer_modified.py`): `indices = torch.randperm(T)` shuffles
all frames once per prompt, `shuffled_num_generations = num_generations // 2`,
`acc_mean >= 0.8 * shuffled_acc_mean` over the accuracy reward (`reward_funcs[0]`, a
score in [0, 1]), then `mask = acc > 0.1; acc[mask] += 0.3`. Image and text prompts get
no bonus (`if self.temporal and video_inputs`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Annotated

import torch
from torch import Tensor

from videorl.algorithms.groups import check_rows, group_sum
from videorl.config.constraints import Between, Checked, Ge


@dataclass(frozen=True)
class TemporalContrastConfig(Checked):
    """`algorithm.temporal_contrast`: `margin` is mu, `bonus` is alpha; `n_shuffled` rollouts
    per video prompt (null: `rollout.n // 2`, Video-R1's count); a row is correct when its
    task accuracy (the reward's `task` component) is > `correct_threshold`."""

    enabled: bool = False
    """Turn on T-GRPO's shuffled-frame rollouts and temporal bonus."""
    margin: Annotated[float, Ge(0)] = 0.8
    """mu: the ordered group's accuracy must reach mu x the shuffled group's."""
    bonus: Annotated[float, Ge(0)] = 0.3
    """alpha: reward added to correct ordered rows when it does."""
    n_shuffled: Annotated[int | None, Ge(1)] = None
    """Shuffled-frame rollouts per video prompt; null = rollout.n // 2."""
    correct_threshold: Annotated[float, Between(0, 1, high_open=True)] = 0.1
    """A row is correct when its task accuracy exceeds this."""

    def shuffled_rollouts(self, n: int) -> int:
        """Shuffled rollouts per video prompt: `n_shuffled`, else `max(1, n // 2)`."""
        return self.n_shuffled if self.n_shuffled is not None else max(1, n // 2)


def frame_permutation(num_frames: int, seed: int) -> list[int]:
    """A uniformly random order of `num_frames` frames (shuffled = `frames[perm]`), as
    Video-R1's `torch.randperm`, seeded; redrawn while it is the identity (for 2+ frames),
    so the shuffled group never sees the ordered video."""
    rng = random.Random(seed)
    perm = list(range(num_frames))
    if num_frames < 2:
        return perm
    while perm == sorted(perm):
        rng.shuffle(perm)
    return perm


@torch.no_grad()
def group_accuracy(accuracy: Tensor, group_ids: Tensor, num_groups: int) -> Tensor:
    """[G] mean accuracy of each group's rows (0 for a group without rows)."""
    check_rows(group_ids, accuracy=accuracy)
    accuracy = accuracy.to(torch.float32)
    counts = group_sum(torch.ones_like(accuracy), group_ids, num_groups)
    return group_sum(accuracy, group_ids, num_groups) / counts.clamp_min(1.0)


@torch.no_grad()
def temporal_contrast_bonus(
    accuracy: Tensor,
    group_ids: Tensor,
    ordered_acc: Tensor,
    shuffled_acc: Tensor,
    config: TemporalContrastConfig,
) -> Tensor:
    """[B] bonus per ordered row: `alpha * 1[p_g >= mu * p~_g] * 1[acc_i > tau]`, where
    `p_g = ordered_acc[g]` and `p~_g = shuffled_acc[g]` for row i's group g; a group whose
    `shuffled_acc` is NaN (no shuffled rollouts: an image or text prompt) gets none."""
    check_rows(group_ids, accuracy=accuracy)
    p, p_shuffled = ordered_acc[group_ids], shuffled_acc[group_ids]
    passed = ~torch.isnan(p_shuffled) & (p >= config.margin * p_shuffled)
    correct = accuracy.to(torch.float32) > config.correct_threshold
    return config.bonus * (passed & correct).to(torch.float32)
