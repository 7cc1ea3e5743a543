"""Per-token log-probabilities of response tokens, with vision inputs.

`logp_t = log softmax(z_t / T)[o_t]` for each response token o_t, where z_t are the logits at
the position before it and T the rollout temperature. The model's own forward computes
logits for the response positions only (`logits_to_keep`), never for the prompt, and the
float32 log-softmax runs over chunks of positions so that no second full-size copy exists.
Calling the root module's forward (not its submodules) keeps FSDP2's hooks in charge.

`rows_logprobs` is the one entry point for rows of prompts and responses: padded
(`collate`) or padding-free packed (`models/packing.py`), as the loaded model is set up;
both return the same [B, R] layout.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch.nn.utils.rnn import pad_sequence

from videorl.models.batching import plan_microbatches
from videorl.models.inputs import PromptEncoding, collate
from videorl.models.loading import LoadedModel
from videorl.models.packing import pack_rows
from videorl.models.shared_prompt import distinct_prompts, shared_prompt_logprobs, worth_sharing
from videorl.models.visual_cache import cached_encoder_outputs, with_encoder_outputs


def _chunk_logprobs(
    logits: torch.Tensor, targets: torch.Tensor, temperature: float
) -> tuple[torch.Tensor, torch.Tensor]:
    logits = logits.float() / temperature
    log_norm = torch.logsumexp(logits, dim=-1)
    logp = logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1) - log_norm
    entropy = log_norm - (torch.softmax(logits, dim=-1) * logits).sum(-1)
    return logp, entropy


def _chunked(
    logits: torch.Tensor, targets: torch.Tensor, temperature: float, chunk: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-probs and entropies over the last dim of `logits` [..., K, V], `chunk` positions at a time."""
    logps, entropies = [], []
    for start in range(0, targets.shape[-1], chunk):
        lp, ent = _chunk_logprobs(
            logits[..., start : start + chunk, :], targets[..., start : start + chunk], temperature
        )
        logps.append(lp)
        entropies.append(ent)
    return torch.cat(logps, dim=-1), torch.cat(entropies, dim=-1)


def _check_temperature(temperature: float) -> None:
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0 for log-probs, got {temperature}")


def response_logprobs(
    model: torch.nn.Module,
    inputs: dict[str, torch.Tensor],
    response_ids: torch.Tensor,
    *,
    temperature: float = 1.0,
    chunk: int = 1024,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-probs and entropies [B, R] of `response_ids` (the last R positions of the inputs).

    Rows are laid out as [left-padded prompt | right-padded response] (see `collate`);
    values at padded response positions are meaningless and must be masked by the caller.
    """
    _check_temperature(temperature)
    response_len = response_ids.shape[1]
    logits = model(**inputs, use_cache=False, logits_to_keep=response_len + 1).logits[:, :-1]
    return _chunked(logits, response_ids, temperature, chunk)


def packed_logprobs(
    model: torch.nn.Module,
    prompts: Sequence[PromptEncoding],
    responses: Sequence[torch.Tensor],
    *,
    temperature: float = 1.0,
    chunk: int = 1024,
    encoder_outputs: dict[str, Any] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The same [B, R] values as `response_logprobs` on `collate`d rows, computed from one
    padding-free packed sequence; logits only at the positions before response tokens.
    `encoder_outputs` (the rows' vision embeddings, `models/visual_cache.py`) replace the
    pixels when given."""
    _check_temperature(temperature)
    device = next(model.parameters()).device
    packed = pack_rows(model, prompts, responses)
    inputs = {k: v.to(device) for k, v in packed.inputs.items()}
    inputs = with_encoder_outputs(inputs, encoder_outputs)
    positions = packed.logit_positions.to(device)
    logits = model(**inputs, use_cache=False, logits_to_keep=positions).logits[0]
    logp, entropy = _chunked(logits, packed.targets.to(device), temperature, chunk)
    lengths = packed.response_lengths
    return (
        pad_sequence(logp.split(lengths), batch_first=True),
        pad_sequence(entropy.split(lengths), batch_first=True),
    )


def rows_logprobs(
    loaded: LoadedModel,
    prompts: Sequence[PromptEncoding],
    responses: Sequence[torch.Tensor],
    *,
    temperature: float,
    response_token_types: Sequence[torch.Tensor] | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Log-probs, entropies and the response mask, each [B, R] on the model's device, of each
    row's response: rows of a shared prompt run its forward once when `loaded.share_prompts`
    (`models/shared_prompt.py`), otherwise packed when `loaded.packing`, else padded.

    `response_token_types` (multi-turn rows, `rollout/multiturn.py`): the responses hold
    tool turns with media, whose vision tensors the prompts carry; such rows always run
    padded, because shared-prompt forwards and packing lay out media in the prompt only,
    with each item's stored embedding (the visual cache keeps every clip, frame and crop
    of a trajectory apart, `visual_cache.note_parts`)."""
    device = next(loaded.model.parameters()).device
    if response_token_types is not None:
        inputs, mask = collate(prompts, responses, loaded.pad_token_id, response_token_types)
        vision = cached_encoder_outputs(loaded, prompts)
        inputs = with_encoder_outputs({k: v.to(device) for k, v in inputs.items()}, vision)
        targets = inputs["input_ids"][:, -mask.shape[1] :]
        logp, entropy = response_logprobs(loaded.model, inputs, targets, temperature=temperature)
        return logp, entropy, mask.to(device)
    if loaded.share_prompts and worth_sharing(prompts, responses):
        return shared_prompt_logprobs(
            loaded.model,
            prompts,
            responses,
            loaded.pad_token_id,
            logprobs_of=lambda logits, targets: _chunked(logits, targets, temperature, 1024),
            encoder_outputs=cached_encoder_outputs(loaded, distinct_prompts(prompts)),
        )
    vision = cached_encoder_outputs(loaded, prompts)
    if loaded.packing:
        logp, entropy = packed_logprobs(
            loaded.model, prompts, responses, temperature=temperature, encoder_outputs=vision
        )
        lengths = torch.tensor([int(r.numel()) for r in responses], device=device)
        mask = (torch.arange(logp.shape[1], device=device) < lengths[:, None]).float()
        return logp, entropy, mask
    inputs, mask = collate(prompts, responses, loaded.pad_token_id)
    inputs = with_encoder_outputs({k: v.to(device) for k, v in inputs.items()}, vision)
    targets = inputs["input_ids"][:, -mask.shape[1] :]
    logp, entropy = response_logprobs(loaded.model, inputs, targets, temperature=temperature)
    return logp, entropy, mask.to(device)


@torch.no_grad()
def logprobs_in_microbatches(
    loaded: LoadedModel,
    prompts: Sequence[PromptEncoding],
    responses: Sequence[torch.Tensor],
    *,
    temperature: float,
    token_budget: int,
    response_token_types: Sequence[torch.Tensor] | None = None,
) -> torch.Tensor:
    """[B, R] float32 CPU log-probs of each row's response under `loaded`, without grad, in
    micro-batches of at most `token_budget` prompt + response tokens (`rows_logprobs` each;
    `response_token_types` as there)."""
    length = max(int(r.numel()) for r in responses)
    out = torch.zeros(len(responses), length)
    sizes = [p.length + int(r.numel()) for p, r in zip(prompts, responses, strict=True)]
    packed = loaded.packing and response_token_types is None
    for micro in plan_microbatches(sizes, token_budget, packed=packed):
        logp, _, _ = rows_logprobs(
            loaded,
            [prompts[i] for i in micro],
            [responses[i] for i in micro],
            temperature=temperature,
            response_token_types=None
            if response_token_types is None
            else [response_token_types[i] for i in micro],
        )
        for j, i in enumerate(micro):
            n = int(responses[i].numel())
            out[i, :n] = logp[j, :n].float().cpu()
    return out
