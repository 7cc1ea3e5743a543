"""`loop_worker.py` that also records, on each rank, the sequence length of every split
forward's shard (`models/sequence_parallel.gather_sequence`), in `$SP_SHARDS/rank-<r>.json`:
proof that the run's forwards were split, not merely equal."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import torch

import videorl.models.sequence_parallel as sp
from tests.trainer import loop_worker


def main(argv: list[str]) -> None:
    shards: list[int] = []
    gather = sp.gather_sequence

    def recorded(x: torch.Tensor, group: object) -> torch.Tensor:
        shards.append(int(x.shape[1]))
        return gather(x, group)  # type: ignore[arg-type]

    sp.gather_sequence = recorded
    loop_worker.main(argv)
    out = Path(os.environ["SP_SHARDS"]) / f"rank-{os.environ.get('RANK', '0')}.json"
    out.write_text(json.dumps(shards))


if __name__ == "__main__":
    main(sys.argv[1:])
