"""Validation inside training: mean@k and best@k of the reward over k samples per prompt.

With `rollout.tools` (and in `videorl sft` with `sft.target=tool_trajectory`) the answers
come from the multi-turn loop that training's rollouts and `videorl eval --tools` use
(`rollout.multiturn.answer_with_tools`): prompts that list the tools, `rollout.max_turns`
model turns of `rollout.max_new_tokens` within `rollout.max_total_tokens`, the final model
turn scored; `val/tools/*` say what the answers did with the tools. Video controls are not
measured with tools (the config refuses `trainer.val_controls` with `rollout.tools`): the
tools read the original file, so a control's answer would see the real frames.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import torch

from videorl.distributed import barrier
from videorl.models.chat_template import template_kwargs
from videorl.reduction import logged
from videorl.rewards.batch import score_batch
from videorl.rollout.engine import HFEngine, RolloutEngine
from videorl.rollout.groups import engine_generate
from videorl.rollout.multiturn import MultiTurnLimits, answer_with_tools, tool_use_summary
from videorl.rollout.prompting import DecodedPrompts, decode_prompts
from videorl.trainer.checkpoint import save_model_folder, write_atomically
from videorl.trainer.rng import derived_seed, isolated
from videorl.trainer.state import BestStep
from videorl.trainer.subagents import subagents_of
from videorl.video.cache import MediaSource
from videorl.video.controls import ControlledVideos

if TYPE_CHECKING:
    from videorl.config import Config
    from videorl.data.records import TaskRecord
    from videorl.models.generate import SamplingParams
    from videorl.rewards.calls import ToolCallMade
    from videorl.rewards.config import RewardConfig
    from videorl.rollout.tools import ToolRunner
    from videorl.trainer.state import TrainState


def mean_and_best_at_k(rewards: torch.Tensor) -> tuple[float, float]:
    """`rewards` [P, k]: mean@k = mean over all samples; best@k = mean over prompts of the max."""
    return float(rewards.mean()), float(rewards.max(dim=1).values.mean())


def validation_sampling(cfg: Config) -> SamplingParams:
    """k = `trainer.val_samples` samples per prompt at `trainer.val_temperature` /
    `trainer.val_top_p` (the rollout's values when null; temperature 0 = greedy)."""
    trainer, rollout = cfg.trainer, cfg.rollout
    return rollout.sampling(
        n=trainer.val_samples,
        temperature=rollout.temperature
        if trainer.val_temperature is None
        else trainer.val_temperature,
        top_p=rollout.top_p if trainer.val_top_p is None else trainer.val_top_p,
    )


@torch.no_grad()
def validate(state: TrainState) -> dict[str, Any]:
    """Sample k responses per validation prompt (`validation_sampling`; multi-turn with the
    run's tools when it has them) and score them with plain tIoU for temporal grounding (as
    evaluation and TaRO's validation do); with `trainer.val_controls`, again on each
    control's media (`control_metrics`)."""
    cfg = state.cfg
    reward = replace(cfg.reward, tg_shaping="iou")
    measure = functools.partial(
        sampled_rewards,
        state,
        params=validation_sampling(cfg),
        reward=reward,
        tools=state.tools,
    )
    sampled = measure(state.videos)
    if not sampled.records:
        return {"val/skipped_media": float(sampled.skipped)}
    mean_k, best_k = mean_and_best_at_k(sampled.rewards)
    metrics: dict[str, Any] = {
        "val/reward_mean_at_k": mean_k,
        "val/reward_best_at_k": best_k,
        "val/skipped_media": float(sampled.skipped),
        **sampled.tool_metrics,
    }
    for family, index in family_rows(sampled.records).items():
        mean_f, best_f = mean_and_best_at_k(sampled.rewards[index])
        metrics[f"val/{family}/mean_at_k"] = mean_f
        metrics[f"val/{family}/best_at_k"] = best_f
    return {**metrics, **control_metrics(state, mean_k, measure)}


def family_rows(records: list[TaskRecord]) -> dict[str, list[int]]:
    """Family short name -> the row indices of its records."""
    by_family: dict[str, list[int]] = defaultdict(list)
    for i, record in enumerate(records):
        by_family[record.family.short].append(i)
    return by_family


def control_metrics(
    state: TrainState,
    real_mean: float,
    measure: Callable[[MediaSource], SampledRewards],
) -> dict[str, float]:
    """For each of `trainer.val_controls`: the mean reward on the control's media and the
    video gain `val/video_gain/NAME` = `real_mean` - that mean (same records, same sampling)."""
    metrics = {}
    for control in state.cfg.trainer.val_controls:
        on_control = measure(ControlledVideos(state.videos, control)).rewards
        metrics[f"val/control/{control}/mean_at_k"] = float(on_control.mean())
        metrics[f"val/video_gain/{control}"] = real_mean - float(on_control.mean())
    return metrics


@dataclass(frozen=True)
class SampledRewards:
    """Validation's answers, scored."""

    records: list[TaskRecord]  # the validation records that decoded
    rewards: torch.Tensor  # [P, k]: the reward of each record's k answers
    skipped: int  # records whose media did not decode
    # With tools: `val/tools/calls_per_answer`, `errors_per_answer`, `turns_mean`,
    # `turns_max`, `answers_with_calls` (`tool_use_summary`); empty without.
    tool_metrics: dict[str, float] = field(default_factory=dict)


def sampled_rewards(
    state: TrainState,
    videos: MediaSource,
    *,
    params: SamplingParams,
    reward: RewardConfig,
    tools: ToolRunner | None = None,
) -> SampledRewards:
    """`params.n` answers to each validation record, its media read through `videos`, with
    `tools` in the multi-turn loop when given (`answer_texts`), scored under `reward`."""
    cfg = state.cfg
    schemas = tools.schemas() if tools is not None else []
    decoded = decode_prompts(state.val_records, videos, state.policy, cfg.data, schemas)
    records = decoded.records
    if not records:
        return SampledRewards(records, torch.zeros(0, params.n), decoded.skipped_media)
    # Only rank 0 validates; vLLM's data-parallel engines must all step together, so under
    # torchrun validation generates with the HF copy of the synced policy.
    engine = (
        HFEngine(state.logprob_model, share_prefill=cfg.rollout.share_prefill)
        if state.info.enabled
        else state.engine
    )
    answers = answer(state, engine, decoded, params, tools, getattr(videos, "control", None))
    rows = [r for r in records for _ in range(params.n)]
    pool = state.pool if reward == cfg.reward else None  # a pool is bound to its config
    overall = score_batch(rows, answers.texts, reward, pool=pool, calls=answers.calls).overall
    rewards = torch.tensor(overall).view(len(records), params.n)
    return SampledRewards(records, rewards, decoded.skipped_media, answers.tool_metrics)


class Answers(NamedTuple):
    """Validation's answers, `params.n` per prompt in prompt order."""

    texts: list[str]  # what the rewards read: the (final model turn's) text
    calls: list[tuple[ToolCallMade, ...]] | None  # each answer's tool calls (None: no tools)
    tool_metrics: dict[str, float]  # `val/tools/*` (empty without tools)


def answer(
    state: TrainState,
    engine: RolloutEngine,
    decoded: DecodedPrompts,
    params: SamplingParams,
    tools: ToolRunner | None,
    control: str | None = None,
) -> Answers:
    """`params.n` answers per prompt. With `tools`: multi-turn answers (`answer_with_tools`,
    within `rollout.max_turns` and `rollout.max_total_tokens`, the tools reading each
    record's original media, their outputs under the video `control` of a control run),
    their final model turns, their calls (which the reward plug-ins that take `calls`
    receive, as in training) and the `val/tools/*` metrics."""
    if tools is None:
        decode = state.policy.tokenizer.decode
        generations = engine.generate(decoded.prompts, params)
        texts = [decode(t, skip_special_tokens=True) for g in generations for t in g.token_ids]
        return Answers(texts, None, {})
    cfg = state.cfg
    groups = answer_with_tools(
        engine.loaded,
        decoded.records,
        decoded.prompts,
        decoded.media,
        tools,
        params,
        MultiTurnLimits(
            cfg.rollout.max_turns, cfg.rollout.max_total_tokens, cfg.rollout.max_calls_per_turn
        ),
        video_config=cfg.video,
        template_kwargs=template_kwargs(cfg.data.think, cfg.data.chat_template_kwargs),
        generate_fn=engine_generate(engine),
        control=control,
        subagents=subagents_of(cfg.rollout),
    )
    rows = [row for group in groups for row in group]
    use = tool_use_summary([row.use for row in rows])
    del use["answers"]
    return Answers(
        [row.text for row in rows],
        [row.calls_made() for row in rows],
        {f"val/tools/{name}": float(value) for name, value in use.items()},
    )


class Validator:
    """Validation inside the loop: every `trainer.val_every` steps when there are
    validation records, on rank 0 (the others wait), on random streams of its own seeded by
    (`trainer.seed`, step) (`rng.isolated`: training is the same with or without it);
    tracks the best step by `trainer.best_metric` (in `state.best`) and writes that model
    to `best/`."""

    def __init__(self, state: TrainState, run: Callable[[TrainState], dict[str, Any]]):
        self.every = state.cfg.trainer.val_every if state.val_records else 0
        self.run = run
        self.best_dir = Path(state.cfg.trainer.output_dir) / "best"

    def should_validate(self, step: int) -> bool:
        return bool(self.every) and step % self.every == 0

    def __call__(self, state: TrainState) -> dict[str, Any]:
        metrics: dict[str, Any] = {}
        if state.info.is_main:
            with isolated(derived_seed(state.cfg.trainer.seed, state.step)):
                metrics = logged(self.run(state))  # rank 0's alone: nothing to reduce
            if self._improved(state, metrics):
                metrics["val/best_step"] = state.step
                write_atomically(
                    self.best_dir,
                    lambda tmp: save_model_folder(state.logprob_model, tmp),
                    replace=True,
                )
        barrier()
        return metrics

    @staticmethod
    def _improved(state: TrainState, metrics: dict[str, Any]) -> bool:
        """Remember the best validation step by `trainer.best_metric`; True when it improved."""
        name = state.cfg.trainer.best_metric
        value = metrics.get(name)
        if value is None or (state.best is not None and value <= state.best.value):
            return False
        state.best = BestStep(step=state.step, value=float(value), metric=name)
        return True
