"""`videorl train quickstart OVERRIDES [--resume R]` in-process, with each prompt's rollouts
sampled from a generator seeded by the prompt's tokens, so that they depend on the weights
and the prompt but not on which rank (or batch) generates them. Under torchrun every rank
runs it. Used by test_distributed_loop.py (2 ranks must equal 1 process at the loop level)
and by the kill/interrupt tests, which hold it at a known point (`pause.py`)."""

from __future__ import annotations

import sys
import zlib

import torch

from tests.trainer import pause
from videorl.api import resolve_config_path
from videorl.config import load_config
from videorl.models.generate import generate
from videorl.rollout.engine import HFEngine
from videorl.trainer.loop import run_training


def seeded_generate(self, prompts, params):
    out = []
    for prompt in prompts:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(zlib.crc32(prompt.input_ids.numpy().tobytes()))
            out.extend(generate(self.loaded, [prompt], params))
    return out


def main(argv: list[str]) -> None:
    resume = None
    if "--resume" in argv:
        at = argv.index("--resume")
        resume, argv = argv[at + 1], argv[:at] + argv[at + 2 :]
    HFEngine.generate = seeded_generate  # type: ignore[method-assign]  # patched on purpose in this worker
    pause.install_from_env()
    run_training(load_config(resolve_config_path("quickstart"), argv), resume=resume)


if __name__ == "__main__":
    main(sys.argv[1:])
