"""Test factories shared across test folders: `make_batch` builds a `RolloutBatch` from the
few fields a test cares about, every other field empty or zero."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from videorl.rollout.batch import RolloutBatch


def make_batch(
    rewards: Sequence[float] | None = (),
    groups: Sequence[int] = (),
    *,
    records: Sequence[Any] | None = None,
    lengths: Sequence[int] | None = None,
    annotation: Sequence[bool] | None = None,
    **fields: Any,
) -> RolloutBatch:
    """A batch of `len(groups)` rows (row i in group `groups[i]`) with `rewards` (None: not
    scored yet), row i's response `lengths[i]` tokens long (2 by default); `records` one per
    group (None each by default, as prompts and videos); `fields` set any other
    `RolloutBatch` field. No rows: the batch of a rank whose samples were all skipped."""
    count, num_groups = len(groups), max(groups, default=-1) + 1
    none = torch.zeros(count, dtype=torch.bool)
    values: dict[str, Any] = {
        "records": list(records) if records is not None else [None] * num_groups,
        "prompts": [None] * num_groups,
        "videos": [None] * num_groups,
        "group_ids": torch.tensor(list(groups), dtype=torch.long),
        "responses": [torch.arange(n) for n in (lengths or [2] * count)],
        "texts": [""] * count,
        "is_annotation": none if annotation is None else torch.tensor(list(annotation)),
        "off_policy": none,
        "truncated": none,
        "rewards": None if rewards is None else torch.tensor(list(rewards), dtype=torch.float32),
    }
    return RolloutBatch(**(values | fields))
