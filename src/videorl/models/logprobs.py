"""Per-token log-probabilities of response tokens, with vision inputs.

`logp_t = log softmax(z_t / T)[o_t]` for each response token o_t, where z_t are the logits at
the position before it and T the rollout temperature. The model's own forward computes
logits for the response positions only (`logits_to_keep`), never for the prompt, and the
float32 log-softmax runs over chunks of positions so that no second full-size copy exists.
Calling the root module's forward (not its submodules) keeps FSDP2's hooks in charge.
"""

from __future__ import annotations

import torch


def _chunk_logprobs(
    logits: torch.Tensor, targets: torch.Tensor, temperature: float
) -> tuple[torch.Tensor, torch.Tensor]:
    logits = logits.float() / temperature
    log_norm = torch.logsumexp(logits, dim=-1)
    logp = logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1) - log_norm
    entropy = log_norm - (torch.softmax(logits, dim=-1) * logits).sum(-1)
    return logp, entropy


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
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0 for log-probs, got {temperature}")
    response_len = response_ids.shape[1]
    logits = model(**inputs, use_cache=False, logits_to_keep=response_len + 1).logits[:, :-1]
    logps, entropies = [], []
    for start in range(0, response_len, chunk):
        lp, ent = _chunk_logprobs(
            logits[:, start : start + chunk], response_ids[:, start : start + chunk], temperature
        )
        logps.append(lp)
        entropies.append(ent)
    return torch.cat(logps, dim=1), torch.cat(entropies, dim=1)
