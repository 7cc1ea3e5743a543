"""A scripted policy: an engine whose generation calls answer with given texts, whatever the
model would sample, to test tool plumbing (docs/tools.md) without a model that calls tools.

`ScriptedEngine(loaded, script)` answers sample k of every context of its `turn`-th
generation call (counted from 0 since construction) with `script[turn][k % len(script[turn])]`;
calls past the script's end replay its last turn. A multi-turn rollout's first call samples
`n` per prompt, its later calls one per row still running (`rollout_multiturn`), so from the
second turn on every row plays its turn's first text:

    engine = ScriptedEngine(loaded, [[CALL, ANSWER], [ANSWER]])  # even samples call once

Each call's contexts are kept in `calls`. With `encode_media`, a call first encodes its
contexts' media through the visual-embedding cache, as HF `generate` does before its
prefill, so the cache counts what a real rollout encodes (`tools/vision_encodes_per_row`).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from videorl.models.generate import Generation, SamplingParams
from videorl.models.inputs import PromptEncoding
from videorl.models.loading import LoadedModel
from videorl.models.visual_cache import cached_encoder_outputs
from videorl.rollout.engine import HFEngine


class ScriptedEngine(HFEngine):
    """The HF engine (its other methods unchanged) with scripted `generate` calls."""

    def __init__(
        self, loaded: LoadedModel, script: Sequence[Sequence[str]], encode_media: bool = False
    ) -> None:
        super().__init__(loaded)
        if not script or not all(script):
            raise ValueError("a script needs at least one turn and a text in every turn")
        self.script = script
        self.encode_media = encode_media
        self.calls: list[list[PromptEncoding]] = []

    def generate(
        self, prompts: Sequence[PromptEncoding], params: SamplingParams
    ) -> list[Generation]:
        if self.encode_media:
            cached_encoder_outputs(self.loaded, prompts)
        turn = self.script[min(len(self.calls), len(self.script) - 1)]
        self.calls.append(list(prompts))
        ids = [self._ids(turn[k % len(turn)]) for k in range(params.n)]
        return [Generation(ids, [], [False] * params.n) for _ in prompts]

    def _ids(self, text: str) -> torch.Tensor:
        """`text`'s tokens, ended as a sampled turn is: by the first end-of-sequence token."""
        ids = self.loaded.tokenizer(text, add_special_tokens=False)["input_ids"]
        return torch.tensor([*ids, self.loaded.eos_token_ids[0]])
