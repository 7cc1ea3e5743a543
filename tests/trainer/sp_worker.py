"""`loop_worker.py` that also records, on each rank, the sequence length of every split
forward's shard (`models/sequence_parallel.gather_sequence`) and the number of pixel patches
its vision towers encoded (`encoded_patches`), in `$SP_SHARDS/rank-<r>.json`: proof that
the run's forwards were split, not merely equal, and that the group shared the encoding.

`$SP_JOB` picks the job (`train`, the default, or `sft`: `JOBS`) and `$SP_GENERATE` the
rollouts (`seeded`, the default, `drawing` or `scripted` tool calls: `GENERATORS`), each on the
quickstart recipe with the overrides of the command line."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import torch

import videorl.models.sequence_parallel as sp
from tests.trainer.loop_worker import seeded_generate
from videorl.api import resolve_config_path
from videorl.config import load_config
from videorl.models.generate import Generation
from videorl.models.visual_cache import cached_encoder_outputs
from videorl.rollout.engine import HFEngine
from videorl.trainer.loop import run_training
from videorl.trainer.sft import run_sft

CALL = '<tool_call>{"name": "get_clip", "arguments": {"start": 1, "end": 3, "fps": 4}}</tool_call>'
ANSWER = "<answer>1 to 3</answer>"


def scripted_generate(self: HFEngine, prompts: list, params: object) -> list[Generation]:
    """Tool rollouts whatever the weights: on a prompt's first turn (its only video the
    prompt's) the even samples call `get_clip` and the odd ones answer; every later turn
    answers. A function of the prompts alone, so any rank that generates returns the same.
    The prompts' media are encoded into the visual cache as a generation encodes them."""
    with torch.no_grad():
        cached_encoder_outputs(self.loaded, prompts)
    tokenizer, eos = self.loaded.tokenizer, self.loaded.eos_token_ids[0]
    out = []
    for prompt in prompts:
        first = prompt.vision["video_grid_thw"].shape[0] == 1
        n = params.n  # type: ignore[attr-defined]
        texts = [CALL if first and k % 2 == 0 else ANSWER for k in range(n)]
        ids = [torch.tensor(tokenizer.encode(t, add_special_tokens=False) + [eos]) for t in texts]
        out.append(Generation(ids, [], [False] * n))
    return out


def drawing_generate(self: HFEngine, prompts: list, params: object) -> list[Generation]:
    """`seeded_generate`, then a draw from torch's global generator per prompt, as sampling
    draws from it: on the rank that generates only, unless the group shares its state."""
    out = seeded_generate(self, prompts, params)
    torch.rand(len(prompts))
    return out


GENERATORS = {"seeded": seeded_generate, "scripted": scripted_generate, "drawing": drawing_generate}
JOBS = {"train": run_training, "sft": run_sft}


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
    HFEngine.generate = GENERATORS[os.environ.get("SP_GENERATE", "seeded")]  # type: ignore[method-assign]
    config = load_config(resolve_config_path("quickstart"), argv)
    with encoded_patches() as patches:
        JOBS[os.environ.get("SP_JOB", "train")](config)
    out = Path(os.environ["SP_SHARDS"]) / f"rank-{os.environ.get('RANK', '0')}.json"
    out.write_text(json.dumps({"shards": shards, "patches": patches}))


if __name__ == "__main__":
    main(sys.argv[1:])
