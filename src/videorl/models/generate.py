"""Sampling n responses per prompt with Hugging Face `generate`, vision tokens banned."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import torch

from videorl.models.inputs import PromptEncoding, collate
from videorl.models.kv_cache import cache_argument, output_cache
from videorl.models.loading import LoadedModel
from videorl.models.visual_cache import cached_encoder_outputs, with_encoder_outputs
from videorl.versions import installed_in_range


@dataclass(frozen=True)
class RoundQuota:
    """An over-sampled round's cut (trainer/oversample.py): every row stops once `need`
    groups have ended and every group in `must` has. Row i belongs to group
    `row_groups[i]` and has ended at an end token or after `row_budgets[i]` new tokens."""

    need: int
    must: tuple[int, ...]
    row_groups: tuple[int, ...]
    row_budgets: tuple[int, ...]


@dataclass(frozen=True)
class SamplingParams:
    """How responses are sampled; `temperature == 0` means greedy."""

    n: int = 1
    max_new_tokens: int = 64
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    logprobs: bool = False  # also return each sampled token's log-prob (`SampledLogprobs`)
    quota: RoundQuota | None = None  # over-sampled rounds: when every row stops at once


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


class QuotaCriterion:
    """`RoundQuota` as a `generate` stopping criterion (a callable of the decoded ids)."""

    def __init__(self, quota: RoundQuota, prompt_len: int, eos: Sequence[int]) -> None:
        self.quota, self.prompt_len, self.eos = quota, prompt_len, torch.tensor(list(eos))
        self.groups = torch.tensor(quota.row_groups)
        self.budgets = torch.tensor(quota.row_budgets)
        self.must = torch.tensor(quota.must, dtype=torch.long)

    def __call__(self, input_ids: torch.Tensor, _scores: Any, **_kwargs: Any) -> torch.Tensor:
        new = input_ids[:, self.prompt_len :].cpu()
        ended = torch.isin(new, self.eos).any(dim=1) | (new.shape[1] >= self.budgets)
        # a group (of those with rows here) has ended when none of its rows is still going
        rows = torch.bincount(self.groups)
        going = torch.bincount(self.groups, weights=(~ended).double(), minlength=rows.numel())
        ended_groups = (rows > 0) & (going == 0)
        done = int(ended_groups.sum()) >= self.quota.need and bool(ended_groups[self.must].all())
        return torch.full((input_ids.shape[0],), bool(done), device=input_ids.device)


class SampledLogprobs:
    """A `generate` logits processor that keeps each sampled token's log-prob under the
    policy at the sampling temperature, log softmax(z / T)[token], from the raw logits z
    (before banning, top-k and top-p: what the training forward computes). It holds one
    step's log-softmax at a time: at step t+1 `input_ids` ends with the token drawn from
    step t's scores; `finish` takes the last step's from the output sequences."""

    def __init__(self, temperature: float, prompt_len: int) -> None:
        self.scale, self.prompt_len = temperature, prompt_len
        self.taken: list[torch.Tensor] = []
        self.last: torch.Tensor | None = None

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        if self.last is not None and input_ids.shape[1] > self.prompt_len:
            self.taken.append(self._gather(input_ids[:, -1]))
        self.last = torch.log_softmax(scores.float() / self.scale, dim=-1)
        return scores

    def _gather(self, tokens: torch.Tensor) -> torch.Tensor:
        assert self.last is not None
        return self.last.gather(-1, tokens[:, None].to(self.last.device)).squeeze(-1).cpu()

    def finish(self, new_tokens: torch.Tensor) -> torch.Tensor:
        """[rows, new tokens] log-probs of `new_tokens` (the output's tokens after the prompt)."""
        if self.last is not None and len(self.taken) < new_tokens.shape[1]:
            self.taken.append(self._gather(new_tokens[:, -1]))
        if not self.taken:
            return torch.zeros(new_tokens.shape[0], 0)
        return torch.stack(self.taken, dim=1)[:, : new_tokens.shape[1]]


def _recording(
    loaded: LoadedModel, params: SamplingParams, prompt_len: int
) -> tuple[SampledLogprobs | None, dict[str, Any]]:
    """With `params.logprobs`: the recorder, and `generate` arguments that run it first,
    then the banning `generate` would run itself, then its warpers (the same draws)."""
    if not params.logprobs:
        return None, {}
    from transformers import LogitsProcessorList, SuppressTokensLogitsProcessor

    greedy = params.temperature <= 0
    recorder = SampledLogprobs(1.0 if greedy else params.temperature, prompt_len)
    processors: list[Any] = [recorder]
    if loaded.banned_token_ids:
        device = next(loaded.model.parameters()).device
        processors.append(
            SuppressTokensLogitsProcessor(loaded.banned_token_ids, device=str(device))
        )
    return recorder, {"logits_processor": LogitsProcessorList(processors), "suppress_tokens": None}


def _stopping(loaded: LoadedModel, params: SamplingParams, prompt_len: int) -> dict[str, Any]:
    """`generate`'s stopping criteria of an over-sampled round (none without a quota)."""
    if params.quota is None:
        return {}
    from transformers import StoppingCriteriaList

    criterion = QuotaCriterion(params.quota, prompt_len, loaded.eos_token_ids)
    return {"stopping_criteria": StoppingCriteriaList([criterion])}


# `generate` applies what a checkpoint's generation_config.json sets (Qwen2.5-VL-Instruct's:
# repetition_penalty 1.05), so its rows would come from another distribution than the
# policy whose log-probs the loss uses; these are set to "off" on every call.
NEUTRAL_GENERATION: dict[str, Any] = {
    "repetition_penalty": 1.0,
    "encoder_repetition_penalty": 1.0,
    "no_repeat_ngram_size": 0,
    "encoder_no_repeat_ngram_size": 0,
    "min_length": 0,
    "typical_p": 1.0,
    "epsilon_cutoff": 0.0,
    "eta_cutoff": 0.0,
    "num_beams": 1,
    **dict.fromkeys(
        (
            "bad_words_ids",
            "min_new_tokens",
            "sequence_bias",
            "min_p",
            "top_h",
            "forced_bos_token_id",
            "forced_eos_token_id",
            "exponential_decay_length_penalty",
            "begin_suppress_tokens",
            "guidance_scale",
            "watermarking_config",
            "penalty_alpha",
            "dola_layers",
        )
    ),
}


def _sample_kwargs(loaded: LoadedModel, params: SamplingParams) -> dict:
    """`generate` arguments of the sampling itself (shared by both prefill paths): the
    policy's distribution at the temperature, top-p and top-k asked for, nothing else."""
    greedy = params.temperature <= 0
    kwargs: dict[str, Any] = {
        **NEUTRAL_GENERATION,
        "do_sample": not greedy,
        "max_new_tokens": params.max_new_tokens,
        "suppress_tokens": loaded.banned_token_ids or None,
        "eos_token_id": loaded.eos_token_ids,
        "pad_token_id": loaded.pad_token_id,
        "return_dict_in_generate": True,
    }
    if not greedy:
        kwargs.update(
            temperature=params.temperature, top_p=params.top_p, top_k=params.top_k or None
        )
    return kwargs


def can_share_prefill(model: torch.nn.Module, inputs: dict[str, Any], n: int) -> bool:
    """Shared prefill needs n > 1, a prompt of 2+ tokens, a decoder-only model and at least
    one attention layer: `generate` continues a cache only where it can count the cached
    tokens (a purely recurrent model has none; hybrids such as Qwen3.5 are fine from
    transformers 5.24, `layers_share_prefill`). Every transformers cache layer,
    linear-attention state included, expands along the batch (`Cache.reorder_cache`)."""
    config = model.config
    return (
        n > 1
        and inputs["input_ids"].shape[1] > 1
        and hasattr(model, "_prepare_position_ids_for_generation")
        and not getattr(config, "is_encoder_decoder", False)
        and layers_share_prefill(model)
    )


# A prompt prefilled in two pieces (the shared prefill) and in one give the same log-probs
# through Qwen3.5's linear-attention layers from transformers 5.24 (within 1e-4,
# tests/models/test_shared_prefill.py); 5.19's differ by up to 0.02. Older releases take
# the unshared path for hybrid models.
HYBRID_PREFILL_FROM = ">=5.24.0.dev0"


def layers_share_prefill(model: torch.nn.Module) -> bool:
    """Whether `model`'s layers let a prompt's prefill be shared: some attention layer, and
    linear-attention layers only from `HYBRID_PREFILL_FROM`."""
    config = model.config
    text = getattr(config, "text_config", None) or config
    layer_types = getattr(text, "layer_types", None) or ()
    if "linear_attention" not in layer_types:
        return True
    return set(layer_types) != {"linear_attention"} and _hybrid_prefill_supported()


@cache
def _hybrid_prefill_supported() -> bool:
    """Read once: `can_share_prefill` runs at every generate call."""
    return installed_in_range("transformers", HYBRID_PREFILL_FROM)


def _shared_prefill_generate(
    model: torch.nn.Module, inputs: dict[str, Any], expand: torch.Tensor, kwargs: dict[str, Any]
) -> Any:
    """Prefill each prompt once, expand its cache to its samples, then decode them together.

    `expand[r]` is the prompt of decoded row r: `arange(B).repeat_interleave(n)` for n samples
    of each prompt (the layout of `num_return_sequences`); an over-sampled round gives each
    prompt its own count (`generate_rows`).

    The prompt minus its last token is run once per prompt (with its video); the cache
    (attention keys/values and, for hybrid models, the linear-attention conv and recurrent
    state) is repeated n times per prompt (`reorder_cache` with `[0]*n + [1]*n + ...`, the
    layout of `num_return_sequences`), and `generate` continues from it: it feeds the last
    prompt token of each of the B*n rows, then samples exactly as the unshared path (the same
    rows in the same order, so the same random draws). Positions (Qwen-VL's multimodal RoPE
    positions included) are computed once for the whole prompt as `generate` itself does and
    passed along, so no rope-delta state is needed in the decode steps.
    """
    ids, mask = inputs["input_ids"], inputs["attention_mask"]
    extra = {k: v for k, v in inputs.items() if k not in ("input_ids", "attention_mask")}
    hf: Any = model  # a transformers model: methods nn.Module does not declare
    position_ids = hf._prepare_position_ids_for_generation(
        ids, {"input_ids": ids, "attention_mask": mask, **extra}
    )
    batch_dim = 1 if position_ids.ndim == 3 else 0
    prefill_inputs = {k: v for k, v in extra.items() if k != "mm_token_type_ids"}
    if "mm_token_type_ids" in extra:
        prefill_inputs["mm_token_type_ids"] = extra["mm_token_type_ids"][:, :-1]
    prefill = model(
        input_ids=ids[:, :-1],
        attention_mask=mask[:, :-1],
        position_ids=position_ids[..., :-1],
        use_cache=True,
        logits_to_keep=1,
        **prefill_inputs,
    )
    cache = output_cache(prefill)
    expand = expand.to(ids.device)
    cache.reorder_cache(expand)
    return hf.generate(
        input_ids=ids.index_select(0, expand),
        attention_mask=mask.index_select(0, expand),
        position_ids=position_ids.index_select(batch_dim, expand),
        **{cache_argument(): cache},
        **kwargs,
    )


@torch.no_grad()
def generate(
    loaded: LoadedModel,
    prompts: Sequence[PromptEncoding],
    params: SamplingParams,
    *,
    share_prefill: bool = False,
    hf_kwargs: Mapping[str, Any] | None = None,
) -> list[Generation]:
    """Sample `params.n` responses for each prompt in one batched `generate` call.

    `share_prefill` prefills each prompt once for its n samples (`_shared_prefill_generate`);
    otherwise `generate` prefills every one of the B*n rows. Both give the same responses.
    Greedy decoding gives n identical responses: it runs once per prompt and repeats them.
    `hf_kwargs` go to `generate` as they are (e.g. `stopping_criteria`, `logits_processor`).
    """
    model: Any = loaded.model  # a transformers model: methods nn.Module does not declare
    inputs = _model_inputs(loaded, prompts)
    kwargs = {**_sample_kwargs(loaded, params), **(hf_kwargs or {})}
    greedy = params.temperature <= 0
    was_training = model.training
    model.eval()
    runs = 1 if greedy else params.n  # HF greedy refuses num_return_sequences > 1
    kwargs.update(_stopping(loaded, params, inputs["input_ids"].shape[1]))
    recorder, recording = _recording(loaded, params, inputs["input_ids"].shape[1])
    kwargs.update(recording)
    if share_prefill and can_share_prefill(model, inputs, runs):
        expand = torch.arange(len(prompts)).repeat_interleave(runs)
        out = _shared_prefill_generate(model, inputs, expand, kwargs)
    else:
        out = model.generate(**inputs, num_return_sequences=runs, **kwargs)
    model.train(was_training)
    copies = params.n // runs
    prompt_len = inputs["input_ids"].shape[1]
    new_tokens = out.sequences[:, prompt_len:].cpu()
    step_logprobs = torch.zeros(new_tokens.shape[0], 0)
    if recorder is not None:
        step_logprobs = recorder.finish(new_tokens)
    new_tokens = new_tokens.repeat_interleave(copies, dim=0)
    step_logprobs = step_logprobs.repeat_interleave(copies, dim=0)
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


@torch.no_grad()
def generate_rows(
    loaded: LoadedModel,
    prompts: Sequence[PromptEncoding],
    counts: Sequence[int],
    params: SamplingParams,
) -> list[list[torch.Tensor]]:
    """`counts[p]` sampled rows of prompt p in one call (each prompt prefilled once for its
    rows where the model allows, `_shared_prefill_generate`), stopped by `params.quota`:
    every row's new tokens (untrimmed), rows in prompt order."""
    model: Any = loaded.model
    inputs = _model_inputs(loaded, prompts)
    width = inputs["input_ids"].shape[1]
    kwargs = {**_sample_kwargs(loaded, params), **_stopping(loaded, params, width)}
    expand = torch.repeat_interleave(torch.arange(len(prompts)), torch.tensor(list(counts)))
    was_training = model.training
    model.eval()
    if can_share_prefill(model, inputs, 2):
        out = _shared_prefill_generate(model, inputs, expand, kwargs)
    else:  # every row prefilled on its own
        rows = [prompts[int(p)] for p in expand]
        out = model.generate(**_model_inputs(loaded, rows), **kwargs)
    model.train(was_training)
    new_tokens = out.sequences[:, width:].cpu()
    starts = [0, *torch.tensor(list(counts)).cumsum(0).tolist()]
    return [list(new_tokens[starts[p] : starts[p + 1]]) for p in range(len(prompts))]


def _model_inputs(loaded: LoadedModel, prompts: Sequence[PromptEncoding]) -> dict[str, Any]:
    """The prompts collated (left-padded) on the model's device, cached vision outputs in."""
    device = next(loaded.model.parameters()).device
    inputs, _ = collate(prompts, None, loaded.pad_token_id)
    inputs = {k: v.to(device) for k, v in inputs.items()}
    return with_encoder_outputs(inputs, cached_encoder_outputs(loaded, prompts))
