"""Give a random-init tiny model a trained policy's spread of response lengths, in place.

A random-init model almost never samples its end token (1 / vocabulary per step), so every
row runs to `rollout.max_new_tokens` and no step has a tail. A trained policy's lengths
vary: the longest row of a step is several times the mean (Relax, Qwen3-VL-4B: 6.6x). This
edit gives the end token a near-constant logit offset, so each sampled token ends the row
with probability about 1 / `--mean-tokens` (lengths geometric; rows end at any of the model's
end tokens):

- hidden dimension 0 of every token embedding is set to a constant c, and every layer's
  attention and MLP output projections write nothing into it, so the residual stream's
  dimension 0 is c at every text position;
- the output head reads dimension 0 for the end token only, with weight b: its logit gains
  b * c / rms(x), near b * sqrt(hidden size) as c dominates x; the other tokens' nothing;
- b is found by bisection so that rows sampled after random text prompts have the mean
  length asked for.

The compute per token is unchanged (same layers and shapes); with c dominating, the other
tokens are about as uniform as a random-init model's.

    python bench/long_tail.py MODEL_DIR --mean-tokens 12
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from transformers import PreTrainedModel

EMBED_VALUE = 100.0  # c: far above the residual stream's other dimensions


def _decoder_layers(model: PreTrainedModel) -> torch.nn.ModuleList:
    inner = getattr(model, "model", model)
    layers = getattr(inner, "language_model", inner).layers
    assert isinstance(layers, torch.nn.ModuleList)
    return layers


def _weights(model: PreTrainedModel) -> tuple[torch.Tensor, torch.Tensor]:
    """The input embedding's and the output head's weights (vocab x d)."""
    embed, head = model.get_input_embeddings(), model.get_output_embeddings()
    assert isinstance(embed, torch.nn.Embedding) and isinstance(head, torch.nn.Linear)
    return embed.weight, head.weight


def mean_length(model: PreTrainedModel, ends: list[int], budget: int) -> float:
    """The mean length of 32 rows sampled after random 24-token prompts (seeded)."""
    from transformers import GenerationMixin

    assert isinstance(model, GenerationMixin)
    torch.manual_seed(0)
    vocab = _weights(model)[1].shape[0]
    prompts = torch.randint(3, vocab, (32, 24))
    out = model.generate(
        input_ids=prompts,
        attention_mask=torch.ones_like(prompts),
        do_sample=True,
        top_k=0,  # as rollout.top_k: 0 (transformers would otherwise keep the top 50)
        top_p=1.0,
        temperature=1.0,
        max_new_tokens=budget,
        eos_token_id=ends,
        pad_token_id=ends[-1],
    )[:, prompts.shape[1] :]
    ended = torch.isin(out, torch.tensor(ends))
    first = torch.where(ended.any(dim=1), ended.int().argmax(dim=1) + 1, budget)
    return float(first.float().mean())


@torch.no_grad()
def give_long_tail(model: PreTrainedModel, ends: list[int], mean_tokens: float) -> float:
    """Edit `model` (see the module); returns the end-token weight b."""
    eos = ends[0]
    embeddings, head = _weights(model)
    embeddings[:, 0] = EMBED_VALUE
    for layer in _decoder_layers(model):
        layer.get_parameter("self_attn.o_proj.weight")[0, :] = 0
        layer.get_parameter("mlp.down_proj.weight")[0, :] = 0
    head[:, 0] = 0
    low, high = 0.0, 16.0
    for _ in range(8):
        head[eos, 0] = (low + high) / 2
        if mean_length(model, ends, budget=int(6 * mean_tokens)) > mean_tokens:
            low = float(head[eos, 0])
        else:
            high = float(head[eos, 0])
    return float(head[eos, 0])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("--mean-tokens", type=float, default=12.0)
    args = parser.parse_args(argv)
    from transformers import AutoModelForImageTextToText

    model = AutoModelForImageTextToText.from_pretrained(args.model).eval()
    ends = model.generation_config.eos_token_id
    ends = [ends] if isinstance(ends, int) else list(ends)
    weight = give_long_tail(model, ends, args.mean_tokens)
    model.save_pretrained(args.model)
    print(f"{args.model}: end-token weight {weight:.3f} for a mean of {args.mean_tokens} tokens")


if __name__ == "__main__":
    main()
