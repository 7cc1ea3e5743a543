"""Length reward terms, added to a row's reward after its verifier has scored it.

Both measure a response in tokens, EOS included (the published code counts the response's
attention or completion mask, which covers the EOS token).

**DAPO overlong reward shaping** (Yu et al. 2025, arXiv 2503.14476, "Overlong Reward
Shaping"; verl `verl/workers/reward_manager/dapo.py`), with budget `L_max` =
`rollout.max_new_tokens` and buffer `L_cache` = `reward.overlong.buffer_len`:

    R_len(y) = min(-(|y| - (L_max - L_cache)) / L_cache * penalty_factor, 0)

i.e. 0 up to `L_max - L_cache` tokens, then linear down to `-penalty_factor` at `L_max`;
floored at `-penalty_factor` (the paper's -1 beyond `L_max`, which a response cut at the
budget never reaches).

**Video-R1 length reward** (Feng et al. 2025, arXiv 2503.21776; github tulerfeng/Video-R1
`src/r1-v/src/open_r1/trainer/grpo_trainer.py`, `len_control`):

    R_band(y_i) = bonus * 1[task_i > threshold] * 1[min <= |y_i| <= max] * 1[C_g >= min_correct]

with `C_g` the number of correct rows in the row's group (Video-R1: accuracy > 0.1,
320 <= tokens <= 512, +0.2, more than one correct completion of the prompt). "Correct" is
our verifier's `task` component, the score before format and bonus terms: an exact answer
for the choice and math families (task is 0 or 1), IoU / MRA above the threshold for the
grounding, tracking and numeric families, as Video-R1's partial-credit types (OCR,
free-form, regression) pass `> 0.1`.
"""

from __future__ import annotations

import torch
from torch import Tensor

from videorl.rewards.config import LengthBandConfig, OverlongConfig


def overlong_penalty(lengths: Tensor, max_length: int, config: OverlongConfig) -> Tensor:
    """`[B]` DAPO's R_len (module docstring) for response lengths `[B]` (tokens)."""
    expected = max_length - config.buffer_len
    penalty = -(lengths.double() - expected) / config.buffer_len * config.penalty_factor
    return penalty.clamp(min=-config.penalty_factor, max=0.0).float()


def length_bonus(
    task: Tensor,
    lengths: Tensor,
    group_ids: Tensor,
    eligible: Tensor,
    config: LengthBandConfig,
) -> Tensor:
    """`[B]` Video-R1's R_band (module docstring): `task` the verifier's task component,
    `lengths` the response tokens, `eligible` the rows that may earn it and count as
    correct (the policy's generated rows, not OraRL annotation rows)."""
    correct = (task > config.correct_threshold) & eligible.bool()
    groups = int(group_ids.max()) + 1 if group_ids.numel() else 0
    per_group = torch.bincount(group_ids[correct], minlength=groups)
    enough = per_group[group_ids] >= config.min_correct
    in_band = (lengths >= config.min) & (lengths <= config.max)
    earned = correct & enough & in_band
    return torch.where(earned, config.bonus, 0.0).float()
