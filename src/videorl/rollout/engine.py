"""The rollout-engine interface and its Hugging Face implementation.

An engine samples responses for encoded prompts (optionally continuing a forced prefix),
frees its memory between rollout and update (`sleep`) and receives the policy's new weights
after each optimizer step (`sync_weights`). Its `loaded` model is the HF model that scores
the rollouts (no-grad log-probs): the policy itself on one process, its unsharded synced
copy under FSDP. `HFEngine` (here) shares the training model, so `sync_weights` has
nothing to copy; `VLLMEngine` (`rollout/vllm_engine.py`) pushes the weights into vLLM.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Protocol

import torch

from videorl.models.generate import Generation, SamplingParams, generate, trim_response
from videorl.models.inputs import PromptEncoding, with_prefix
from videorl.models.loading import LoadedModel


class RolloutEngine(Protocol):
    loaded: LoadedModel  # the HF model that scores the rollouts

    def generate(
        self, prompts: Sequence[PromptEncoding], params: SamplingParams
    ) -> list[Generation]: ...

    def continue_prefixes(
        self,
        prompts: Sequence[PromptEncoding],
        prefixes: Sequence[torch.Tensor],
        params: SamplingParams,
    ) -> list[Generation]: ...

    def sync_weights(self, policy: torch.nn.Module) -> None: ...

    def sleep(self) -> None: ...


class TokenScorer(Protocol):
    """Scores given responses: each one's per-token log-probs at temperature 1 (the vLLM
    distillation teacher, `VLLMEngine.token_logprobs`)."""

    def token_logprobs(
        self, prompts: Sequence[PromptEncoding], responses: Sequence[torch.Tensor]
    ) -> list[torch.Tensor]: ...


class HFEngine:
    """Generation with the training model itself (`model.generate`), batched over prompts.

    `share_prefill` (`rollout.share_prefill`) prefills each prompt once for its n samples
    instead of once per sampled row; the responses are the same (`models/generate.py`).
    """

    def __init__(
        self, loaded: LoadedModel, max_prompts_per_call: int = 16, share_prefill: bool = True
    ) -> None:
        self.loaded = loaded
        self.max_prompts_per_call = max_prompts_per_call
        self.share_prefill = share_prefill

    def generate(
        self, prompts: Sequence[PromptEncoding], params: SamplingParams
    ) -> list[Generation]:
        if params.quota is not None:  # the round's quota counts every row: one call
            return generate(self.loaded, prompts, params, share_prefill=self.share_prefill)
        out: list[Generation] = []
        for start in range(0, len(prompts), self.max_prompts_per_call):
            chunk = prompts[start : start + self.max_prompts_per_call]
            out.extend(generate(self.loaded, chunk, params, share_prefill=self.share_prefill))
        return out

    def continue_prefixes(
        self,
        prompts: Sequence[PromptEncoding],
        prefixes: Sequence[torch.Tensor],
        params: SamplingParams,
    ) -> list[Generation]:
        """One continuation per (prompt, prefix); the returned response includes the prefix."""
        extended = [with_prefix(p, x) for p, x in zip(prompts, prefixes, strict=True)]
        single = replace(params, n=1)
        out = []
        for prefix, gen in zip(prefixes, self.generate(extended, single), strict=True):
            budget = max(0, params.max_new_tokens - prefix.numel())
            tokens = torch.cat([prefix, gen.token_ids[0]])[: prefix.numel() + budget]
            logprobs = gen.logprobs[0]
            if logprobs.numel():  # forced prefix tokens were not sampled: log-prob 0
                logprobs = torch.cat([torch.zeros(prefix.numel()), logprobs])[: tokens.numel()]
            _, truncated = trim_response(
                tokens, self.loaded.eos_token_ids
            )  # after the cut to the budget
            out.append(Generation(token_ids=[tokens], logprobs=[logprobs], truncated=[truncated]))
        return out

    def sync_weights(self, policy: torch.nn.Module) -> None:
        """Copy the policy's (gathered) weights into the generation model; nothing to do when
        the engine generates with the policy module itself (one process, no sharding)."""
        if policy is self.loaded.model:
            return
        from videorl.distributed import full_state_dict

        self.loaded.model.load_state_dict(full_state_dict(policy))

    def sleep(self) -> None:
        """Nothing to free: the HF engine generates with the training model itself."""
