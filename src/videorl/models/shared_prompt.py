"""Log-probs of rows that share prompts, with the prompt forward run once per distinct prompt.

The n rows of a group are `[prompt | response_j]` with one prompt (and its video): a padded
or packed forward computes the prompt's hidden states once per row. Causal attention makes
the prompt's keys and values independent of what follows, so

    logits(row_j) = LM(response_j | cache(prompt))

where `cache(prompt)` comes from one forward of the prompt (gradients on, when they are),
expanded along the batch to the rows (`index_select`, whose backward sums the rows'
gradients into the one prompt forward: the same gradient as k separate prompt forwards).
The rows keep the layout and positions of the padded path (`collate`: left-padded prompts,
right-padded responses; Qwen-VL multimodal RoPE positions computed for the full rows by the
model's own `compute_3d_position_ids`, text models `arange`), so the values equal
`response_logprobs` up to float summation order. The logit that predicts the first response
token is the prompt forward's last one. Models with linear-attention layers, sliding
windows or gradient checkpointing (which turns the cache off) take the plain path.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import torch

from videorl.models.inputs import VISION_KEYS, PromptEncoding, collate
from videorl.models.kv_cache import cache_argument, output_cache

_POSITION_ARGS = (
    "input_ids",
    "image_grid_thw",
    "video_grid_thw",
    "attention_mask",
    "second_per_grid_ts",
    "mm_token_type_ids",
)


def share_prompt_unsupported_reason(model: torch.nn.Module) -> str | None:
    """Why rows of one prompt cannot share its forward in `model`, or None when they can."""
    config = model.config
    text = getattr(config, "text_config", None) or config
    if "linear_attention" in (getattr(text, "layer_types", None) or ()):
        return "linear-attention layers (their state would need the padded prompt tail)"
    if getattr(text, "use_sliding_window", False) and getattr(text, "sliding_window", None):
        return "sliding-window attention"
    name = (
        "is_activation_checkpointing"
        if hasattr(type(model), "is_activation_checkpointing")
        else "is_gradient_checkpointing"
    )
    if getattr(model, name, False):
        return "gradient checkpointing (it disables the KV cache)"
    return None


def worth_sharing(prompts: Sequence[PromptEncoding], responses: Sequence[torch.Tensor]) -> bool:
    """True when some prompt object serves more than one row (and there is a response)."""
    has_tokens = any(int(r.numel()) for r in responses)
    return has_tokens and len({id(p) for p in prompts}) < len(prompts)


def enable_shared_prompts(enabled: bool, *models: Any) -> None:
    """Set `share_prompts` on each `LoadedModel` (None skipped) whose model supports it."""
    for loaded in models:
        if loaded is not None:
            loaded.share_prompts = enabled and share_prompt_unsupported_reason(loaded.model) is None


def _positions(model: torch.nn.Module, inputs: dict[str, Any]) -> torch.Tensor:
    """The positions the model would compute for the full padded rows (no cache)."""
    backbone = getattr(model, "model", model)
    compute = getattr(backbone, "compute_3d_position_ids", None)
    if compute is not None:
        accepted = inspect.signature(compute).parameters
        kwargs = {k: inputs.get(k) for k in _POSITION_ARGS if k in accepted}
        kwargs[cache_argument()] = None  # positions for the whole rows: no cache
        positions = compute(inputs_embeds=None, **kwargs)
        if positions is not None:
            return positions
    ids = inputs["input_ids"]
    return torch.arange(ids.shape[1], device=ids.device).expand(ids.shape[0], -1)


def distinct_prompts(prompts: Sequence[PromptEncoding]) -> list[PromptEncoding]:
    """Each prompt object once, in order of first use."""
    return list({id(p): p for p in prompts}.values())


def shared_prompt_logprobs(
    model: torch.nn.Module,
    prompts: Sequence[PromptEncoding],
    responses: Sequence[torch.Tensor],
    pad_id: int,
    *,
    logprobs_of: Callable[[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]],
    encoder_outputs: dict[str, Any] | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Log-probs, entropies and the response mask [B, R] of rows `[prompt_i | response_i]`,
    one prompt forward per distinct prompt object. `logprobs_of(logits, targets)` turns
    logits [B, R, V] into (log-probs, entropies); `encoder_outputs` are the vision embeddings
    of `distinct_prompts(prompts)` (else their pixels are encoded here)."""
    device = next(model.parameters()).device
    firsts = distinct_prompts(prompts)
    slot = {id(p): i for i, p in enumerate(firsts)}
    rows = torch.tensor([slot[id(p)] for p in prompts], device=device)
    full, mask = collate(prompts, responses, pad_id)
    pixels = ("pixel_values", "pixel_values_videos")  # every row's copy: not needed on device
    full = {k: v.to(device) for k, v in full.items() if k not in pixels}
    prompt_len = full["input_ids"].shape[1] - mask.shape[1]
    positions = _positions(model, full)
    index = [next(i for i, q in enumerate(prompts) if q is p) for p in firsts]
    head_inputs: dict[str, Any] = {
        "input_ids": full["input_ids"][index, :prompt_len],
        "attention_mask": full["attention_mask"][index, :prompt_len],
        "position_ids": positions[..., index, :prompt_len],
    }
    if "mm_token_type_ids" in full:
        head_inputs["mm_token_type_ids"] = full["mm_token_type_ids"][index, :prompt_len]
    if encoder_outputs is not None:
        head_inputs["mm_encoder_outputs"] = encoder_outputs
    else:
        own, _ = collate(firsts, None, pad_id)  # the distinct prompts' vision tensors
        head_inputs.update({k: own[k].to(device) for k in VISION_KEYS if k in own})
    head = model(**head_inputs, use_cache=True, logits_to_keep=1)
    cache = output_cache(head)
    cache.reorder_cache(rows)  # [U] prompts -> [B] rows (backward: sums the rows' gradients)
    tail = model(
        input_ids=full["input_ids"][:, prompt_len:],
        attention_mask=full["attention_mask"],
        position_ids=positions[..., prompt_len:],
        use_cache=True,
        **{cache_argument(): cache},
    )
    logits = torch.cat([head.logits[rows], tail.logits[:, :-1]], dim=1)
    logp, entropy = logprobs_of(logits, full["input_ids"][:, prompt_len:])
    return logp, entropy, mask.to(device)
