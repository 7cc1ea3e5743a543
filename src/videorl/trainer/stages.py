"""The step's stages after rollout: each is a function from `RolloutBatch` to `RolloutBatch`.

score -> sensitivity (TaRO) -> teacher log-probs (OPD family) -> advantages -> selection.
"""

from __future__ import annotations

from dataclasses import replace

import torch

from videorl.algorithms.advantages import get_estimator
from videorl.algorithms.selection import (
    PruningConfig,
    post_selection_correction,
    row_scores,
    select_rows,
    selection_reference,
)
from videorl.algorithms.taro import off_policy_advantages
from videorl.algorithms.turns import spread_over_tokens, turn_advantages, turn_reward_table
from videorl.config import AlgorithmConfig
from videorl.data.records import TemporalAnswer
from videorl.models.inputs import PromptEncoding
from videorl.models.loading import LoadedModel
from videorl.models.logprobs import logprobs_in_microbatches
from videorl.reduction import MetricValue
from videorl.rewards.batch import (
    ANNOTATION_PREFIX,
    CONSTRUCTED_PREFIX,
    POLICY_PREFIX,
    batch_metrics,
    score_batch,
)
from videorl.rewards.config import RewardConfig
from videorl.rewards.length import length_bonus, overlong_penalty
from videorl.rewards.pool import ScoringPool
from videorl.rewards.sensitivity import (
    applies_to,
    boundary_shuffle,
    sensitivity_bonus,
    shuffle_seed,
    taro_boundary_shuffle,
    token_mean_logp_gap,
)
from videorl.rollout.batch import RolloutBatch, pad_rows
from videorl.rollout.engine import TokenScorer
from videorl.rollout.fingerprints import checked_prompts
from videorl.rollout.prompting import Encoder


def row_kinds(batch: RolloutBatch) -> dict[str, torch.Tensor]:
    """Masks of the row kinds by metric prefix: the policy's own samples (`reward/`), the
    OraRL annotation rows (`reward/annotation/`), the TaRO constructed-prefix rows
    (`reward/constructed/`)."""
    constructed = batch.off_policy & ~batch.is_annotation
    return {
        POLICY_PREFIX: ~batch.is_annotation & ~constructed,
        ANNOTATION_PREFIX: batch.is_annotation,
        CONSTRUCTED_PREFIX: constructed,
    }


def score(
    batch: RolloutBatch, config: RewardConfig, pool: ScoringPool | None = None
) -> RolloutBatch:
    """Reward every row with its family's verifier (in worker processes when configured).

    `reward/*` metrics describe the policy rows only; annotation and constructed rows get
    `reward/annotation/*` and `reward/constructed/*` (present when the batch has such rows).
    `reward/seconds` is the whole batch's scoring time, under the policy rows' prefix only.
    """
    records = batch.row_records()
    scores = score_batch(records, batch.texts, config, pool=pool, calls=batch.row_calls())
    rewards = torch.tensor(scores.overall, dtype=torch.float32)
    rewards = torch.nan_to_num(rewards, nan=0.0, posinf=0.0, neginf=0.0)
    components = [dict(r.components) for r in scores.results]
    metrics: dict[str, MetricValue] = {}
    for prefix, mask in row_kinds(batch).items():
        rows = mask.nonzero().flatten().tolist()
        if rows or prefix == POLICY_PREFIX:
            picked = ([records[i] for i in rows], [scores.results[i] for i in rows])
            seconds = scores.seconds if prefix == POLICY_PREFIX else None
            metrics.update(batch_metrics(*picked, seconds, prefix=prefix))
    return replace(batch, rewards=rewards, components=components).with_metrics(**metrics)


def add_sensitivity_bonus(
    batch: RolloutBatch,
    loaded: LoadedModel,
    encode: Encoder,
    config: RewardConfig,
    *,
    step: int,
    temperature: float,
    token_budget: int,
) -> RolloutBatch:
    """TaRO temporal-sensitivity reward (docs/methods.md#temporal-sensitivity-reward) for
    temporal-grounding rows.

    d_i = mean_t (logp_orig - logp_shuffled) with frames shuffled near the ground-truth
    boundaries (seeded by (step, row)); bonus = alpha * 1[d_i > thr_g + margin] when
    tIoU_i >= gate. Each row keeps its own d_i.
    """
    rows = [
        i
        for i in range(batch.num_rows)
        if applies_to(batch.records[int(batch.group_ids[i])])
        and batch.videos[int(batch.group_ids[i])] is not None
        and not batch.is_annotation[i]
    ]
    if not rows:
        return batch
    shuffled_prompts = [_boundary_shuffled_prompt(batch, i, encode, config, step) for i in rows]
    responses = [batch.responses[i] for i in rows]
    # both passes in one forward layout (the shuffled prompts are one per row, so never
    # share a prompt forward): where a shuffle moves no frame, d is exactly 0, not float noise
    loaded = replace(loaded, share_prompts=False)
    original = logprobs_in_microbatches(
        loaded,
        [batch.prompts[int(batch.group_ids[i])] for i in rows],
        responses,
        temperature=temperature,
        token_budget=token_budget,
    )
    shuffled = logprobs_in_microbatches(
        loaded, shuffled_prompts, responses, temperature=temperature, token_budget=token_budget
    )
    mask = pad_rows([torch.ones(r.numel()) for r in responses], original.shape[1])
    d = token_mean_logp_gap(original, shuffled, mask)
    index = torch.tensor(rows)
    components = batch.scored_components()
    tiou = torch.tensor([components[i].get("iou", components[i].get("task", 0.0)) for i in rows])
    bonus = sensitivity_bonus(d, batch.group_ids[index], tiou, config.sensitivity)
    rewards = batch.scored_rewards().clone()
    rewards[index] += bonus
    return replace(batch, rewards=rewards).with_metrics(
        **{
            "sensitivity/d_mean": float(d.mean()),
            "sensitivity/bonus_frac": float((bonus > 0).float().mean()),
        }
    )


def _boundary_shuffled_prompt(
    batch: RolloutBatch, row: int, encode: Encoder, config: RewardConfig, step: int
) -> PromptEncoding:
    """Row `row`'s prompt with its frames shuffled near the ground-truth boundaries."""
    group = int(batch.group_ids[row])
    video, record = batch.videos[group], batch.records[group]
    assert video is not None, "the bonus applies to rows with a decoded video only"
    assert isinstance(record.answer, TemporalAnswer), f"{record.id}: not temporal grounding"
    if config.sensitivity.shuffle == "taro":
        perm = taro_boundary_shuffle(
            video.meta.frame_indices,
            video.meta.source_fps,
            record.answer.windows[0],
            config.sensitivity.radius,
            shuffle_seed(step, row),
        )
    else:
        perm = boundary_shuffle(
            video.meta.timestamps,
            record.answer.windows[0],
            config.sensitivity.radius,
            shuffle_seed(step, row),
        )
    return encode(record, replace(video, frames=video.frames[perm]))


def add_teacher_logprobs(
    batch: RolloutBatch,
    student: LoadedModel,
    teacher: LoadedModel,
    *,
    temperature: float,
    token_budget: int,
    teacher_temperature: float = 1.0,
    teacher_engine: TokenScorer | None = None,
) -> RolloutBatch:
    """Teacher and student log-probs of the sampled tokens, for on-policy distillation: the
    student's at the rollout `temperature`, the teacher's at `teacher_temperature`
    (`algorithm.distill.teacher_temperature`, OPDVR's `TEACHER_TEMPERATURE`). With a
    `teacher_engine` (`algorithm.distill.teacher_engine: vllm`) the teacher's come from it
    (temperature 1.0, which the config enforces) instead of an HF forward of `teacher`.
    Multi-turn rows are scored over the whole trajectory with every turn's media (their
    tool tokens are masked out of the estimator by `response_mask`)."""
    prompts, types = checked_prompts(batch, "teacher forward"), batch.response_token_types()
    if teacher_engine is not None:
        teacher_logp = torch.zeros(
            len(batch.responses), max(int(r.numel()) for r in batch.responses)
        )
        scored = teacher_engine.token_logprobs(prompts, batch.responses)
        for row, logp in enumerate(scored):
            teacher_logp[row, : logp.numel()] = logp
    else:
        teacher_logp = logprobs_in_microbatches(
            teacher,
            prompts,
            batch.responses,
            temperature=teacher_temperature,
            token_budget=token_budget,
            response_token_types=types,
        )
    student_logp = logprobs_in_microbatches(
        student,
        prompts,
        batch.responses,
        temperature=temperature,
        token_budget=token_budget,
        response_token_types=types,
    )
    return replace(batch, teacher_logp=teacher_logp, student_logp=student_logp)


def compute_advantages(batch: RolloutBatch, config: AlgorithmConfig) -> RolloutBatch:
    """Token advantages [B, R] from the registry (outcome estimators are broadcast over
    tokens); constructed (off-policy) rows then get the TaRO transform."""
    estimator = get_estimator(config.estimator)
    mask = batch.response_mask()
    est_config = config.estimator_config
    if estimator.kind == "token":
        result = estimator(
            batch.teacher_logp,
            batch.student_logp,
            mask,
            scores=batch.rewards,
            group_ids=batch.group_ids,
            config=est_config,
        )
        token_adv = result.advantages
    else:
        kwargs = {"config": est_config} if est_config is not None else {}
        result = estimator(
            batch.rewards, batch.group_ids, is_annotation=batch.is_annotation, **kwargs
        )
        row_adv = result.advantages.float()
        if config.constructed.enabled and bool(batch.off_policy.any()):
            row_adv = off_policy_advantages(
                row_adv, batch.group_ids, batch.off_policy, config.constructed.off_policy
            )
        token_adv = row_adv[:, None] * mask
        if config.turn_rewards:
            token_adv = credit_turns(batch, config) * mask
    token_adv = torch.nan_to_num(token_adv.float(), nan=0.0, posinf=0.0, neginf=0.0) * mask
    return replace(batch, advantages=token_adv).with_metrics(**result.metrics)


def credit_turns(batch: RolloutBatch, config: AlgorithmConfig) -> torch.Tensor:
    """[B, R] per-turn advantages (`algorithms/turns.py`): each token gets its model turn's
    `A_{i,t}` from the row's reward and its `turn/<t>` components."""
    by_turn = turn_advantages(
        batch.scored_rewards(),
        turn_reward_table(batch.scored_components()),
        batch.group_ids,
        estimator=config.estimator,
        std_eps=config.grpo.std_eps,
    )
    return spread_over_tokens(by_turn, batch.response_turns())


def select(batch: RolloutBatch, pruning: PruningConfig, n: int) -> RolloutBatch:
    """OraRL stage D (sign-balanced selection of `pruning.kept_rows(n)` rows per group of n
    policy rows) then stage E (post-selection correction, `pruning.correction`); dropped
    rows leave the batch, so they take no part in the backward pass. Pruning off: every
    row stays."""
    if not pruning.enabled:
        return batch
    mask = batch.response_mask()
    scores = row_scores(batch.token_advantages(), mask)
    reference = selection_reference(
        scores, batch.scored_rewards(), batch.group_ids, batch.is_annotation
    )
    selected = select_rows(scores, batch.group_ids, batch.is_annotation, pruning, n)
    corrected = post_selection_correction(
        scores, batch.group_ids, batch.is_annotation, selected.kept, reference, pruning.correction
    )
    advantages = corrected.advantages.float()[:, None] * mask
    kept_rows = torch.nonzero(selected.kept).flatten()
    batch = replace(batch, advantages=advantages).with_metrics(
        **selected.metrics, **corrected.metrics
    )
    return batch.subset(kept_rows)


def add_length_rewards(
    batch: RolloutBatch, config: RewardConfig, *, max_new_tokens: int
) -> RolloutBatch:
    """DAPO's overlong penalty and Video-R1's length-band bonus (`rewards/length.py`),
    added to the rewards of the generated rows (OraRL annotation rows keep theirs).

    Metrics: `reward/overlong_penalty_mean` and `reward/overlong_frac` (rows penalised),
    `reward/length_bonus_frac` (rows given the bonus), over the generated rows.
    """
    if not (config.overlong.enabled or config.length_band.enabled) or not batch.num_rows:
        return batch
    generated = ~batch.is_annotation
    lengths = batch.response_lengths
    count = max(int(generated.sum()), 1)
    rewards, metrics = batch.scored_rewards().clone(), {}
    if config.overlong.enabled:
        penalty = torch.where(
            generated, overlong_penalty(lengths, max_new_tokens, config.overlong), 0.0
        )
        rewards += penalty
        metrics["reward/overlong_penalty_mean"] = float(penalty.sum()) / count
        metrics["reward/overlong_frac"] = float((penalty < 0).sum()) / count
    if config.length_band.enabled:
        components = batch.scored_components()
        task = torch.tensor([c.get("task", 0.0) for c in components], dtype=torch.float32)
        bonus = length_bonus(task, lengths, batch.group_ids, generated, config.length_band)
        rewards += bonus
        metrics["reward/length_bonus_frac"] = float((bonus != 0).sum()) / count
    return replace(batch, rewards=rewards).with_metrics(**metrics)
