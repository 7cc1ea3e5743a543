"""Per-token log-probabilities of response tokens, with vision inputs, memory-light.

`logp_t = log softmax(z_t / T)[o_t]` for each response token o_t, where z_t are the logits at
the position before it and T the rollout temperature. The LM head runs over response
positions only and in chunks, so at most `chunk` x vocab logits exist at a time (and, with
gradients on, each chunk is recomputed in backward instead of stored).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint


def _chunk_logprobs(
    hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, targets: torch.Tensor, temperature: float
) -> tuple[torch.Tensor, torch.Tensor]:
    logits = F.linear(hidden, weight, bias).float() / temperature
    log_norm = torch.logsumexp(logits, dim=-1)
    logp = logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1) - log_norm
    probs = torch.softmax(logits, dim=-1)
    entropy = log_norm - (probs * logits).sum(-1)
    return logp, entropy


def decoder_hidden_states(model: torch.nn.Module, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
    """Last hidden states [B, L, H] of the decoder (vision inputs included)."""
    outputs = model.model(**inputs, use_cache=False)
    return outputs.last_hidden_state if hasattr(outputs, "last_hidden_state") else outputs[0]


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
    hidden = decoder_hidden_states(model, inputs)
    hidden = hidden[:, -response_len - 1 : -1]  # the position before each response token
    head = model.get_output_embeddings()
    logps, entropies = [], []
    for start in range(0, response_len, chunk):
        h = hidden[:, start : start + chunk]
        t = response_ids[:, start : start + chunk]
        if torch.is_grad_enabled():
            lp, ent = checkpoint(_chunk_logprobs, h, head.weight, head.bias, t, temperature, use_reentrant=False)
        else:
            lp, ent = _chunk_logprobs(h, head.weight, head.bias, t, temperature)
        logps.append(lp)
        entropies.append(ent)
    return torch.cat(logps, dim=1), torch.cat(entropies, dim=1)
