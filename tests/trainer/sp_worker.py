"""`loop_worker.py` that also records, on each rank, the sequence length of every split
forward's shard (`models/sequence_parallel.gather_sequence`) and the number of pixel patches
its vision towers encoded (`encoded_patches`), in `$SP_SHARDS/rank-<r>.json`: proof that
the run's forwards were split, not merely equal, and that the group shared the encoding."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import torch

import videorl.models.sequence_parallel as sp
from tests.trainer import loop_worker


@contextlib.contextmanager
def encoded_patches() -> Iterator[list[int]]:
    """Within the block, the pixel rows each call of any vision tower's patch embedding
    receives (every tower of every model: the rows this process encodes)."""
    rows: list[int] = []

    def record(module: torch.nn.Module, args: tuple[torch.Tensor, ...]) -> None:
        if type(module).__name__.endswith("VisionPatchEmbed"):
            rows.append(int(args[0].shape[0]))

    hook = torch.nn.modules.module.register_module_forward_pre_hook(record)
    try:
        yield rows
    finally:
        hook.remove()


def main(argv: list[str]) -> None:
    shards: list[int] = []
    gather = sp.gather_sequence

    def recorded(x: torch.Tensor, group: object) -> torch.Tensor:
        shards.append(int(x.shape[1]))
        return gather(x, group)  # type: ignore[arg-type]

    sp.gather_sequence = recorded
    with encoded_patches() as patches:
        loop_worker.main(argv)
    out = Path(os.environ["SP_SHARDS"]) / f"rank-{os.environ.get('RANK', '0')}.json"
    out.write_text(json.dumps({"shards": shards, "patches": patches}))


if __name__ == "__main__":
    main(sys.argv[1:])
