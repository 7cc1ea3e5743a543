"""DAPO dynamic sampling (Yu et al. 2025, arXiv 2503.14476, section 3.2): keep only the
groups whose rows disagree on a metric, so no kept group has all-zero advantages.

Source: volcengine/verl `recipe/dapo/src/dapo_ray_trainer.py` at 4f80e46,
`RayDAPOTrainer.fit` (the `algorithm.filter_groups` branch). Per prompt uid it collects the
metric of every trajectory and keeps the prompt when

    std(metric values of its n rows) > 0   or   the group has a single row

so a group where every row got the same reward, whose group-normalised advantages are all
0, is dropped. Generation batches are drawn until `data.train_batch_size` prompts are
kept (at most `max_num_gen_batches`, 0 = no limit, then `ValueError`), and the batch is cut
to exactly `train_batch_size` prompts in draw order. `trainer/dynamic_sampling.py` runs
that loop; this module holds the config and the pure group filter.

One deliberate difference: "all rows share the value" is tested exactly (max == min), not
as `np.std > 0`, whose float rounding keeps groups of equal non-binary values
(np.std([0.1, 0.1, 0.1]) is about 1e-17); for DAPO's 0/1 accuracy both agree.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Annotated, Literal

import torch
from torch import Tensor

from videorl.algorithms.groups import group_max, group_sum
from videorl.config.constraints import Checked, Ge
from videorl.errors import ConfigError

OnCap = Literal["error", "train"]
_METRIC = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class DynamicSamplingConfig(Checked):
    """`algorithm.dynamic_sampling` (DAPO's `algorithm.filter_groups` and gen batch size).

    metric: the per-row value that decides zero variance: `reward` (the row's whole reward,
      length terms and bonuses included: what the advantage sees; DAPO's `seq_final_reward`)
      or a reward component such as `task` (the verifier's correctness, DAPO's `acc`).
    max_draws: prompt batches drawn per step at most, the first included (DAPO's
      `max_num_gen_batches`, 10 in its script); 0 = no limit.
    batches_per_draw: sampler batches of `data.prompts_per_step` prompts per draw (DAPO's
      `gen_batch_size / train_batch_size`, 1536 / 512 = 3).
    on_cap: at the cap with too few groups kept: `error` stops the run as DAPO does
      (`ValueError: Generated too many`); `train` trains on the groups kept (fewer than the
      step's) and counts it in `dynamic_sampling/capped`.
    """

    enabled: bool = False
    """Drop zero-variance groups and refill the step from further prompts (DAPO)."""
    metric: str = "reward"
    """Per-row value that decides zero variance: reward or a reward component (task)."""
    max_draws: Annotated[int, Ge(0)] = 10
    """Prompt batches drawn per step at most, the first included; 0 = no limit."""
    batches_per_draw: Annotated[int, Ge(1)] = 1
    """Sampler batches of data.prompts_per_step prompts per draw."""
    on_cap: OnCap = "error"
    """At the draw cap with too few groups: error stops the run, train trains on what it kept."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if not _METRIC.match(self.metric):
            raise ConfigError(
                f"metric={self.metric!r} is not a name; use reward or a reward component "
                "such as task"
            )


def zero_variance_groups(
    values: Tensor, group_ids: Tensor, num_groups: int | None = None
) -> Tensor:
    """The keep mask `[G]` of DAPO's group filter: True where group g's rows do not all
    share one value (std > 0) or g has a single row; False for the zero-variance groups
    that are dropped. A group id without rows (below `num_groups`) is not kept.

        values    [1, 1, 1,   0, 1, 0,   0.5,   0, 0]
        group_ids [0, 0, 0,   1, 1, 1,   2,     3, 3]   ->  keep [False, True, True, False]
    """
    if values.shape != group_ids.shape or values.dim() != 1:
        raise ValueError(
            f"values {tuple(values.shape)} and group_ids {tuple(group_ids.shape)} must be "
            "1-D with one entry per row"
        )
    groups = (
        num_groups if num_groups is not None else int(group_ids.max()) + 1 if values.numel() else 0
    )
    values = values.double()
    high = group_max(values, group_ids, groups, initial=-math.inf)
    low = -group_max(-values, group_ids, groups, initial=-math.inf)
    count = group_sum(torch.ones_like(values), group_ids, groups)
    return (count == 1) | ((count > 1) & (high > low))
