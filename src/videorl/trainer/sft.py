"""`videorl sft`: supervised fine-tuning, the warm start before RL.

The loss of a step over records i with prompt x_i and target response y_i (EOS included) is
the token-mean negative log-likelihood of the response only:

    L = - sum_i sum_t log p(y_i,t | x_i, y_i,<t) / sum_i |y_i|

The prompt is context, never a label: log-probs are taken at the response positions only
(`rows_logprobs`, the same function the RL update uses), so prompt tokens get no loss and
SFT and RL see byte-identical prompts (`decode_prompts` -> `encode_record`). Targets come
from the record: its serialized annotation (`sft.target=annotation`, OraRL's annotation
row), TaRO's constructed reasoning then the answer (`sft.target=constructed`), or a gold
tool trajectory (`sft.target=tool_trajectory`, `rollout/tools/gold.py`): the gold calls of
the first tool of `rollout.tools` with a gold plan (a `get_clip` call over the whole video,
two `crop_video` halves, ...), the tool turns with their results, then the answer, in a
prompt that lists `rollout.tools`. The
tool turn is context like the prompt: its tokens have no loss term (the trajectory's loss
mask, as in RL), and the forward sees the clip as the rollout would.

Everything else is the RL loop's (`run_training` with `LoopHooks`): records and loaders,
decode-once video, packed rows and token-budget micro-batches, FSDP2 under torchrun, atomic
checkpoints and `--resume auto`, metric sinks, progress display, `best/` and `final/`.
Validation is the mean reward of greedy answers to the validation prompts under the
training rewards (`val/reward_mean_at_k` with k = 1, greedy); with `sft.target=
tool_trajectory` the answers come from the tool loop, as in RL's validation.
"""

from __future__ import annotations

import functools
import math
import random
import time
from pathlib import Path
from typing import Any

import torch

from videorl.config import Config
from videorl.data.records import TaskRecord
from videorl.distributed import all_reduce, shard_indices
from videorl.models.batching import plan_rank_microbatches
from videorl.models.chat_template import template_kwargs
from videorl.models.generate import SamplingParams
from videorl.models.inputs import PromptEncoding
from videorl.models.loading import LoadedModel
from videorl.models.logprobs import rows_logprobs
from videorl.reduction import summed
from videorl.rewards import answer_twice
from videorl.rewards.annotation import serialize_annotation
from videorl.rewards.protocol import THINK_CLOSE
from videorl.rewards.registry import FAMILY_REWARDS
from videorl.rollout.groups import constructed_prefix
from videorl.rollout.multiturn import MultiTurnLimits, MultiTurnRow, forced_trajectory
from videorl.rollout.prompting import decode_prompts
from videorl.rollout.tools import ToolContext, ToolDecodes
from videorl.rollout.tools.gold import gold_turns
from videorl.trainer.loop import LoopHooks, run_training
from videorl.trainer.sequence_parallel import split_forwards
from videorl.trainer.state import TrainState
from videorl.trainer.step import StepResult
from videorl.trainer.update import MicroBatch
from videorl.trainer.validation import control_metrics, family_rows, sampled_rewards


def target_text(record: TaskRecord, target: str, think: bool, rng: random.Random) -> str:
    """The response SFT teaches for `record`.

    annotation: `serialize_annotation(record, think)` (exactly what OraRL's annotation row
    holds, reward 1). answer_twice: VideoAuto-R1's `\\boxed{y}<think></think>\\boxed{y}`.
    constructed: TaRO's constructed prefix (the query, then an
    order-preserving random subset of the dense captions), `</think>`, then the answer.
    """
    if target == "annotation":
        return serialize_annotation(record, think=think)
    if target == "answer_twice":
        return answer_twice.gold_response(record)
    family = FAMILY_REWARDS[record.family]
    answer = family.protocol.wrap(family.serialize(record), False)
    return f"{constructed_prefix(record, rng)}{THINK_CLOSE}\n\n{answer}"


def target_tokens(
    record: TaskRecord,
    tokenizer: Any,
    eos_id: int,
    budget: int,
    target: str,
    think: bool,
    rng: random.Random,
) -> torch.Tensor:
    """`target_text` tokenized without special tokens, plus EOS, cut to `budget` tokens."""
    ids = tokenizer.encode(target_text(record, target, think, rng), add_special_tokens=False)
    return torch.tensor((ids + [eos_id])[:budget], dtype=torch.long)


def gold_trajectories(
    state: TrainState,
    records: list[TaskRecord],
    prompts: list[PromptEncoding],
    media: list,
    rng: random.Random,
) -> list[MultiTurnRow]:
    """Each record's gold tool trajectory (`gold_turns`), its calls run by the run's tools
    on the record's original media, within `sft.max_response_tokens` tokens; a record calls
    with probability `sft.tool_call_fraction` (drawn from `rng`), else answers directly."""
    cfg, runner = state.cfg, state.tools
    assert runner is not None  # the config requires a tool with a gold plan in rollout.tools
    per_turn = cfg.rollout.max_calls_per_turn
    decodes, kwargs = ToolDecodes(), template_kwargs(cfg.data.think, cfg.data.chat_template_kwargs)
    rows = []
    for record, prompt, video in zip(records, prompts, media, strict=True):
        context = ToolContext(media=record.media, video=video, config=cfg.video, decodes=decodes)
        call = rng.random() < cfg.sft.tool_call_fraction
        turns = gold_turns(
            record, video, cfg.data.think, context.limits, call, cfg.rollout.tools, per_turn
        )
        limits = MultiTurnLimits(len(turns), cfg.sft.max_response_tokens, per_turn)
        rows.append(
            forced_trajectory(
                state.policy, prompt, context, runner, turns, limits, template_kwargs=kwargs
            )
        )
    return rows


def response_nll_sum(
    policy: LoadedModel,
    prompts: list[PromptEncoding],
    responses: list[torch.Tensor],
    trajectories: list[MultiTurnRow] | None = None,
) -> tuple[torch.Tensor, float]:
    """(sum over rows and response tokens of -log p(token | prompt, earlier tokens), number of
    response tokens) for one micro-batch; prompt positions have no term, nor do the tool
    turns of `trajectories` (the rows' trajectories, when the responses are multi-turn)."""
    types = None if trajectories is None else [t.response_token_types for t in trajectories]
    logp, _, mask = rows_logprobs(
        policy, prompts, responses, temperature=1.0, response_token_types=types
    )
    for i, trajectory in enumerate(trajectories or []):
        mask[i, : trajectory.loss_mask.numel()] *= trajectory.loss_mask.to(mask.device)
    return -(logp.float() * mask).sum(), float(mask.sum())


def response_nll(
    state: TrainState,
    prompts: list[PromptEncoding],
    responses: list[torch.Tensor],
    total_tokens: float,
    trajectories: list[MultiTurnRow] | None = None,
) -> float:
    """Forward + backward of `sum NLL(response tokens) / total_tokens` over token-budget
    micro-batches (packed when the model is); returns the loss. Every rank takes as many
    micro-batches (zero-weight dummy rows pad), so FSDP's collectives stay matched."""
    policy, cfg = state.policy, state.cfg
    device = next(policy.model.parameters()).device
    sizes = [p.length + int(r.numel()) for p, r in zip(prompts, responses, strict=True)]
    plan = plan_rank_microbatches(sizes, cfg.optim.micro_batch_tokens, packed=policy.packing)
    autocast, padding = state.autocast_dtype, MicroBatch.padding(policy.pad_token_id)
    loss_sum = 0.0
    for micro in plan:
        chosen = None
        if micro:
            rows, weight = ([prompts[i] for i in micro], [responses[i] for i in micro]), 1.0
            chosen = None if trajectories is None else [trajectories[i] for i in micro]
        else:  # FSDP padding: one dummy token that adds nothing
            rows, weight = (padding.prompts, padding.responses), padding.weight
        with torch.autocast(device.type, dtype=autocast, enabled=autocast is not None):
            nll, _ = response_nll_sum(policy, *rows, chosen)
        loss = nll * weight / max(total_tokens, 1.0)
        # FSDP averages over ranks; we want the sum over data-parallel groups
        (loss * state.info.data_parallel_size).backward()
        loss_sum += float(loss.detach())
    return all_reduce(loss_sum) / state.info.sequence_parallel  # each group counted once


def sft_step(state: TrainState, indices: list[int]) -> StepResult:
    """decode -> targets -> response-only NLL over micro-batches -> one clipped AdamW step."""
    cfg, start = state.cfg, time.perf_counter()
    state.visual_caches.clear()  # e.g. validation's videos
    mine = [state.records[i] for i in shard_indices(indices, state.info)]
    tool_trajectory = cfg.sft.target == "tool_trajectory"
    tools = state.tools.schemas() if tool_trajectory and state.tools is not None else []
    records, prompts, media, skipped, *_ = decode_prompts(
        mine, state.videos, state.policy, cfg.data, tools
    )
    rng = random.Random(cfg.trainer.seed * 1_000_003 + state.step)  # same draw after a resume
    tokenizer, eos = state.policy.tokenizer, state.policy.eos_token_ids[0]
    trajectories = None
    if tool_trajectory:
        trajectories = gold_trajectories(state, records, prompts, media, rng)
        prompts = [t.loss_prompt() for t in trajectories]
        responses = [t.response_ids for t in trajectories]
        counted = [float(t.loss_mask.sum()) for t in trajectories]
        truncated = sum(t.truncated for t in trajectories)
        calling = sum(t.calls > 0 for t in trajectories)
    else:
        responses = [
            target_tokens(
                r, tokenizer, eos, cfg.sft.max_response_tokens, cfg.sft.target, cfg.data.think, rng
            )
            for r in records
        ]
        counted = [float(r.numel()) for r in responses]
        truncated = sum(int(r[-1]) != eos for r in responses)
        calling = 0
    tokens = all_reduce(sum(counted))
    tokens /= state.info.sequence_parallel  # a sequence-parallel group's rows count once
    state.policy.model.train()
    state.optimizer.zero_grad(set_to_none=True)
    with split_forwards(state.info.sequence_group, state.policy):
        loss = response_nll(state, prompts, responses, tokens, trajectories)
    params = [p for p in state.policy.model.parameters() if p.requires_grad]
    grad_norm = torch.nn.utils.clip_grad_norm_(params, cfg.optim.grad_clip)
    norm = float(grad_norm.full_tensor() if hasattr(grad_norm, "full_tensor") else grad_norm)
    finite = math.isfinite(loss) and math.isfinite(norm)  # the same verdict on every rank
    if finite:
        state.optimizer.step()
    state.optimizer.zero_grad(set_to_none=True)
    state.visual_caches.clear()  # the step's pixels and embeddings, as train_step's end
    state.scheduler.step()
    state.engine.sync_weights(state.policy.model)
    seconds = time.perf_counter() - start
    metrics = {
        "sft/loss": loss,
        "sft/target_tokens": tokens,
        "sft/truncated_targets": float(truncated),
        "sft/tool_call_targets": summed(float(calling)),
        "sft/grad_norm": norm,
        "sft/skipped_nonfinite_steps": float(not finite),
        "data/skipped_media": summed(skipped),
        "lr": state.scheduler.get_last_lr()[0],
        "perf/step_s": seconds,
        "perf/tokens_per_s": tokens / max(seconds, 1e-9),
    }
    return StepResult(metrics, [r.id for r in records])


@torch.no_grad()
def greedy_validate(state: TrainState) -> dict[str, Any]:
    """Mean reward of one greedy answer per validation prompt, under the training rewards;
    reported as `val/reward_mean_at_k` (k = 1) and per family `val/<family>/mean_at_k`,
    plus the video gain of each of `trainer.val_controls`. With `sft.target=tool_trajectory`
    the answers come from the tool loop (`rollout.tools`, `rollout.max_turns`), as RL's
    validation, with its `val/tools/*` metrics."""
    cfg = state.cfg
    params = SamplingParams(n=1, max_new_tokens=cfg.rollout.max_new_tokens, temperature=0.0)
    tools = state.tools if cfg.sft.target == "tool_trajectory" else None
    measure = functools.partial(
        sampled_rewards, state, params=params, reward=cfg.reward, tools=tools
    )
    sampled = measure(state.videos)
    if not sampled.records:
        return {"val/skipped_media": float(sampled.skipped)}
    mean = float(sampled.rewards.mean())
    metrics: dict[str, Any] = {
        "val/reward_mean_at_k": mean,
        "val/skipped_media": float(sampled.skipped),
        **sampled.tool_metrics,
    }
    for family, index in family_rows(sampled.records).items():
        metrics[f"val/{family}/mean_at_k"] = float(sampled.rewards[index].mean())
    return {**metrics, **control_metrics(state, mean, measure)}


SFT_HOOKS = LoopHooks(
    step=sft_step,
    validate=greedy_validate,
    reward_key="val/reward_mean_at_k",  # shown on validation steps
    loss_key="sft/loss",
    curve_keys=("sft/loss",),
)


def run_sft(cfg: Config, resume: str | None = None, overwrite: bool = False) -> Path:
    """Fine-tune for `trainer.steps` steps; returns `final/`, a Hugging Face folder that
    `videorl train` takes as `model.path`."""
    return run_training(cfg, resume=resume, overwrite=overwrite, hooks=SFT_HOOKS)
