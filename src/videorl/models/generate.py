"""Sampling n responses per prompt with Hugging Face `generate`, vision tokens banned."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from videorl.models.inputs import PromptEncoding, collate
from videorl.models.loading import LoadedModel


@dataclass(frozen=True)
class SamplingParams:
    """How responses are sampled; `temperature == 0` means greedy."""

    n: int = 1
    max_new_tokens: int = 64
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    logprobs: bool = False  # also return per-token sampling log-probs (keeps each step's logits)


@dataclass(frozen=True)
class Generation:
    """Responses of one prompt: token ids (EOS kept, padding dropped) and their sampling log-probs."""

    token_ids: list[torch.Tensor]
    logprobs: list[torch.Tensor]
    truncated: list[bool]


def trim_response(tokens: torch.Tensor, eos_ids: Sequence[int]) -> tuple[torch.Tensor, bool]:
    """Cut after the first EOS (kept); a response without EOS was truncated by the budget."""
    is_eos = torch.isin(tokens, torch.tensor(list(eos_ids), dtype=tokens.dtype))
    hits = torch.nonzero(is_eos)
    if hits.numel():
        return tokens[: int(hits[0]) + 1], False
    return tokens, True


@torch.no_grad()
def generate(
    loaded: LoadedModel, prompts: Sequence[PromptEncoding], params: SamplingParams
) -> list[Generation]:
    """Sample `params.n` responses for each prompt in one batched `generate` call."""
    model = loaded.model
    device = next(model.parameters()).device
    inputs, _ = collate(prompts, None, loaded.pad_token_id)
    inputs = {k: v.to(device) for k, v in inputs.items()}
    greedy = params.temperature <= 0
    sample_kwargs = (
        {}
        if greedy
        else {
            "temperature": params.temperature,
            "top_p": params.top_p,
            "top_k": params.top_k or None,
        }
    )
    was_training = model.training
    model.eval()
    out = model.generate(
        **inputs,
        do_sample=not greedy,
        num_return_sequences=params.n,
        max_new_tokens=params.max_new_tokens,
        suppress_tokens=loaded.banned_token_ids or None,
        eos_token_id=loaded.eos_token_ids,
        pad_token_id=loaded.pad_token_id,
        return_dict_in_generate=True,
        output_logits=params.logprobs,
        **sample_kwargs,
    )
    model.train(was_training)
    prompt_len = inputs["input_ids"].shape[1]
    new_tokens = out.sequences[:, prompt_len:].cpu()
    step_logprobs = torch.zeros(new_tokens.shape[0], 0)
    if params.logprobs:  # of the policy itself (before banning), so they match the training forward
        scale = 1.0 if greedy else params.temperature
        step_logprobs = torch.stack(
            [
                torch.log_softmax(step.float() / scale, dim=-1)
                .gather(-1, new_tokens[:, i : i + 1].to(step.device))
                .squeeze(-1)
                .cpu()
                for i, step in enumerate(out.logits)
            ],
            dim=1,
        )
    results = []
    for p in range(len(prompts)):
        ids, lps, cut = [], [], []
        for j in range(p * params.n, (p + 1) * params.n):
            tokens, truncated = trim_response(new_tokens[j], loaded.eos_token_ids)
            ids.append(tokens)
            lps.append(step_logprobs[j, : tokens.numel()])
            cut.append(truncated)
        results.append(Generation(token_ids=ids, logprobs=lps, truncated=cut))
    return results
