"""One draw of a step: prompts decoded, rolled out and rewarded (docs/design.md#one-training-step).

What the trainer runs itself in `rollout.mode: sync` and each rollout worker runs in
`async` (`trainer/rollout_worker.py`): the same function over a `Producer`, the models and
caches that a draw touches, so that both modes compute one thing.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from videorl.algorithms.taro import constructed_probability, draw_constructed
from videorl.config import Config
from videorl.data.records import TaskRecord
from videorl.distributed import DistInfo
from videorl.models.chat_template import template_kwargs
from videorl.models.loading import LoadedModel
from videorl.models.visual_cache import VisualCaches
from videorl.reduction import summed
from videorl.rewards.config import RewardConfig
from videorl.rewards.pool import ScoringPool
from videorl.rollout.batch import RolloutBatch
from videorl.rollout.engine import RolloutEngine
from videorl.rollout.fingerprints import with_fingerprints
from videorl.rollout.groups import add_annotation_rows, generate_groups, generate_tool_groups
from videorl.rollout.multiturn import MultiTurnLimits
from videorl.rollout.prompting import DecodedPrompts, decode_prompts, record_encoder
from videorl.rollout.tools import ToolDecodes, ToolRunner
from videorl.trainer.metrics import StageTimer
from videorl.trainer.sequence_parallel import split_forwards
from videorl.trainer.stages import add_length_rewards, add_sensitivity_bonus, score
from videorl.trainer.subagents import subagents_of
from videorl.trainer.tgrpo import add_shuffled_rollouts, add_temporal_contrast_bonus
from videorl.video.cache import VideoCache

ScoreStage = Callable[[RolloutBatch, RewardConfig, ScoringPool | None], RolloutBatch]


@dataclass(frozen=True)
class RewardStages:
    """A draw's reward stages, in order (`rewards`), called through this table so that a
    caller can substitute one (the step's `Stages` extends it): the family rewards, T-GRPO's
    temporal contrast bonus, the length terms, TaRO's sensitivity bonus."""

    score: ScoreStage = score
    temporal_contrast: Callable[..., RolloutBatch] = add_temporal_contrast_bonus
    length_rewards: Callable[..., RolloutBatch] = add_length_rewards
    sensitivity: Callable[..., RolloutBatch] = add_sensitivity_bonus


REWARD_STAGES = RewardStages()


@dataclass
class Producer:
    """What a draw touches: the run's config, the generating policy and its engine, the
    model of the rewards' no-grad passes, the decode cache, tools and scoring pool, and the
    vision models' embedding caches (which the draw's owner clears)."""

    cfg: Config
    policy: LoadedModel
    engine: RolloutEngine
    logprob_model: LoadedModel
    videos: VideoCache
    tools: ToolRunner | None = None
    pool: ScoringPool | None = None
    info: DistInfo | None = None
    visual_caches: VisualCaches = field(default_factory=VisualCaches)
    # keep each sampled token's log-prob as the batch's behaviour log-probs (async workers,
    # rollout.behaviour_logp: sampling); tool-using rows are recomputed instead
    sampling_logp: bool = False

    def split_forwards(self) -> contextlib.AbstractContextManager[None]:
        """The scoring forwards split over the rank's sequence-parallel group, if it has one."""
        group = None if self.info is None else self.info.sequence_group
        return split_forwards(group, self.policy, self.logprob_model)


@dataclass(frozen=True)
class DrawAt:
    """Where a draw stands: the trainer's `step`, the sampler's `epoch`, and `draw` (0: the
    step's batch, > 0: dynamic sampling's refills)."""

    step: int
    epoch: int
    draw: int = 0


# `scored_draw`'s signature: a draw of records decoded, rolled out and rewarded
DrawStage = Callable[
    [Producer, StageTimer, RewardStages, Sequence[TaskRecord], DrawAt], RolloutBatch
]


def scored_draw(
    producer: Producer,
    timer: StageTimer,
    reward_stages: RewardStages,
    records: Sequence[TaskRecord],
    at: DrawAt,
) -> RolloutBatch:
    """`records` decoded, rolled out and rewarded (draw 0 is the step's batch; later draws
    are dynamic sampling's refills); its metrics count the prompts skipped (bad media, over
    `data.max_prompt_tokens`). No usable prompt: still rolls out (lockstep) and returns the
    empty batch."""
    cfg = producer.cfg
    tools = producer.tools.schemas() if producer.tools is not None else []
    with timer("decode"):
        decoded = decode_prompts(
            list(records),
            producer.videos,
            producer.policy,
            cfg.data,
            tools,
            frame_budgets=cfg.data.frame_budgets,
        )
    with timer("rollout"):
        batch = rollout(decoded, producer, at)
        if cfg.trainer.check_inputs:  # what each row's model saw, for the later forwards
            batch = with_fingerprints(batch)
    producer.engine.sleep()  # free the engine's KV cache (and weights) until the weight sync
    batch = batch.with_metrics(
        **{
            "data/skipped_media": summed(decoded.skipped_media, "draw"),
            "data/skipped_long_prompts": summed(decoded.skipped_long, "draw"),
            "data/trimmed_long_prompts": summed(decoded.trimmed_long, "draw"),
        }
    )
    if not decoded.records:
        return batch
    with timer("reward"), producer.split_forwards():
        batch = rewards(
            batch, cfg, reward_stages, producer.pool, producer.logprob_model, step=at.step
        )
    return batch


def rollout(decoded: DecodedPrompts, producer: Producer, at: DrawAt) -> RolloutBatch:
    """n rows per prompt (multi-turn rows calling the producer's tools when the run has
    them), TaRO's constructed rows drawn by the curriculum, OraRL's annotation rows
    appended, T-GRPO's shuffled-frame responses beside the rows. Called with no prompts too:
    vLLM's data-parallel engines step in lockstep. `at.draw` > 0 (dynamic sampling's
    refills) seeds the constructed prefixes apart."""
    cfg, engine, tools = producer.cfg, producer.engine, producer.tools
    tokenizer, algorithm = producer.policy.tokenizer, cfg.algorithm
    constructed = None
    if algorithm.constructed.enabled:
        p = constructed_probability(at.step, at.epoch, algorithm.constructed.curriculum)
        constructed = draw_constructed((len(decoded.prompts), cfg.rollout.n), p)
    if tools is not None:
        cache = producer.policy.visual_cache
        encoded = cache.encoded_items if cache is not None else 0
        batch = generate_tool_groups(
            engine,
            decoded.records,
            decoded.prompts,
            decoded.media,
            cfg.rollout.sampling(),
            runner=tools,
            limits=MultiTurnLimits(
                cfg.rollout.max_turns, cfg.rollout.max_total_tokens, cfg.rollout.max_calls_per_turn
            ),
            decodes=ToolDecodes(),
            video_config=cfg.video,
            template_kwargs=template_kwargs(cfg.data.think, cfg.data.chat_template_kwargs),
            verify=cfg.rollout.frame_search.verify,
            subagents=subagents_of(cfg.rollout),
        )
        if cache is not None and batch.num_rows:  # videos, images, clips, frames, crops
            per_row = (cache.encoded_items - encoded) / batch.num_rows
            batch = batch.with_metrics(**{"tools/vision_encodes_per_row": per_row})
    else:
        batch = generate_groups(
            engine,
            decoded.records,
            decoded.prompts,
            decoded.media,
            cfg.rollout.sampling(logprobs=producer.sampling_logp),
            tokenizer,
            constructed=constructed,
            rng=random.Random(at.step if at.draw == 0 else f"{at.step}:{at.draw}"),
        )
    if algorithm.annotation_rows:
        batch = with_annotation_rows(batch, producer)
    if algorithm.temporal_contrast.enabled:
        encode = record_encoder(producer.logprob_model, cfg.data)
        params, tgrpo = cfg.rollout.sampling(), algorithm.temporal_contrast
        batch = add_shuffled_rollouts(
            batch, engine, encode, params, tgrpo, step=at.step, tokenizer=tokenizer
        )
    return batch


def with_annotation_rows(batch: RolloutBatch, producer: Producer) -> RolloutBatch:
    """OraRL's annotation row appended to each group, within the response budget."""
    eos, budget = producer.policy.eos_token_ids[0], producer.cfg.rollout.max_new_tokens
    tokenizer = producer.policy.tokenizer
    return add_annotation_rows(batch, tokenizer, eos, budget, think=producer.cfg.data.think)


def rewards(
    batch: RolloutBatch,
    cfg: Config,
    stages: RewardStages,
    pool: ScoringPool | None,
    logprob_model: LoadedModel,
    *,
    step: int,
) -> RolloutBatch:
    """score -> T-GRPO temporal contrast bonus -> length terms -> TaRO sensitivity bonus."""
    batch = stages.score(batch, cfg.reward, pool)
    tgrpo = cfg.algorithm.temporal_contrast
    batch = stages.temporal_contrast(batch, cfg.reward, tgrpo, pool)  # needs `shuffled`
    budget = cfg.rollout.response_budget
    batch = stages.length_rewards(batch, cfg.reward, max_new_tokens=budget)
    if cfg.reward.sensitivity.enabled:
        encode = record_encoder(logprob_model, cfg.data)
        batch = stages.sensitivity(
            batch, logprob_model, encode, cfg.reward, step=step, **no_grad_settings(cfg)
        )
    return batch


def no_grad_settings(cfg: Config) -> dict[str, Any]:
    """The no-grad log-prob passes' settings: the rollout temperature, the token budget."""
    return {"temperature": cfg.rollout.temperature, "token_budget": cfg.optim.micro_batch_tokens}
