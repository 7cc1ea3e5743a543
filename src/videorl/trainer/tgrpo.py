"""T-GRPO stages (Video-R1's temporal contrast, `algorithms/tgrpo.py`): shuffled-frame
rollouts in the rollout phase, their scores and the ordered rows' bonus in the reward phase.

The shuffled responses ride in the batch (`RolloutBatch.shuffled`) but are never rows of it,
so they take no part in advantages, selection or the update. Each video prompt's frames come
from the step's decode (`batch.videos[g]`, the decode-once cache) and are permuted in
memory, seeded by (step, group) with the sensitivity reward's `shuffle_seed`; images and
text prompts get no shuffled rollouts and no bonus.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch

from videorl.algorithms.tgrpo import (
    TemporalContrastConfig,
    frame_permutation,
    group_accuracy,
    temporal_contrast_bonus,
)
from videorl.models.generate import SamplingParams
from videorl.rewards.batch import POLICY_PREFIX, score_batch
from videorl.rewards.config import RewardConfig
from videorl.rewards.pool import ScoringPool
from videorl.rewards.sensitivity import shuffle_seed
from videorl.rollout.batch import RolloutBatch, ShuffledRollouts
from videorl.rollout.engine import RolloutEngine
from videorl.rollout.prompting import Encoder
from videorl.trainer.stages import row_kinds


def video_groups(batch: RolloutBatch) -> list[int]:
    """Groups whose prompt carries a decoded video of 2+ frames (images are T=1 media)."""
    return [
        g
        for g, (record, media) in enumerate(zip(batch.records, batch.videos, strict=True))
        if record.video is not None and media is not None and len(media.frames) > 1
    ]


def add_shuffled_rollouts(
    batch: RolloutBatch,
    engine: RolloutEngine,
    encode: Encoder,
    params: SamplingParams,
    config: TemporalContrastConfig,
    *,
    step: int,
    tokenizer: Any,
) -> RolloutBatch:
    """The batch with `shuffled` set: `config.shuffled_rollouts(params.n)` responses per
    video prompt, on its frames in the order `frame_permutation(T, shuffle_seed(step, g))`.
    The engine is called even without video prompts: vLLM's data-parallel engines step in
    lockstep."""
    groups = video_groups(batch)
    prompts = []
    for g in groups:
        media = batch.videos[g]
        assert media is not None, "video_groups keeps decoded videos only"
        perm = frame_permutation(len(media.frames), shuffle_seed(step, g))
        prompts.append(encode(batch.records[g], replace(media, frames=media.frames[perm])))
    n = config.shuffled_rollouts(params.n)
    generations = engine.generate(prompts, replace(params, n=n))
    responses = [ids for gen in generations for ids in gen.token_ids[:n]]
    group_ids = [g for g, gen in zip(groups, generations, strict=True) for _ in gen.token_ids[:n]]
    shuffled = ShuffledRollouts(
        groups=groups,
        group_ids=torch.tensor(group_ids, dtype=torch.long),
        texts=tokenizer.batch_decode(responses, skip_special_tokens=True) if responses else [],
    )
    return replace(batch, shuffled=shuffled)


def task_accuracy(components: dict[str, float]) -> float:
    """A row's accuracy for T-GRPO: its reward's `task` component (Video-R1's accuracy
    reward, `reward_funcs[0]`: the format term is left out)."""
    return float(components.get("task", 0.0))


def add_temporal_contrast_bonus(
    batch: RolloutBatch,
    reward: RewardConfig,
    config: TemporalContrastConfig,
    pool: ScoringPool | None = None,
) -> RolloutBatch:
    """Score the batch's shuffled responses (`batch.shuffled`) with the same reward, then add
    `temporal_contrast_bonus` to the ordered policy rows of each video group (annotation and
    constructed rows neither count towards p nor get the bonus). Metrics over the video
    groups: `tgrpo/ordered_acc` (mean p), `tgrpo/shuffled_acc` (mean p~), `tgrpo/passed_frac`
    (groups with p >= mu * p~), `tgrpo/bonus_frac` (their policy rows that got the bonus)."""
    shuffled = batch.shuffled
    if shuffled is None or not shuffled.groups:
        return batch
    num_groups = batch.num_groups
    scores = score_batch(
        [batch.records[int(g)] for g in shuffled.group_ids], shuffled.texts, reward, pool
    )
    shuffled_row_acc = torch.tensor([task_accuracy(r.components) for r in scores.results])
    shuffled_acc = torch.full((num_groups,), float("nan"))
    videos = torch.tensor(shuffled.groups, dtype=torch.long)
    shuffled_acc[videos] = group_accuracy(shuffled_row_acc, shuffled.group_ids, num_groups)[videos]
    rows = row_kinds(batch)[POLICY_PREFIX].nonzero().flatten()
    components = batch.scored_components()
    accuracy = torch.tensor([task_accuracy(components[int(i)]) for i in rows])
    group_ids = batch.group_ids[rows]
    ordered_acc = group_accuracy(accuracy, group_ids, num_groups)
    bonus = temporal_contrast_bonus(accuracy, group_ids, ordered_acc, shuffled_acc, config)
    rewards = batch.scored_rewards().clone()
    rewards[rows] += bonus
    in_video = torch.isin(group_ids, videos)
    p, p_shuffled = ordered_acc[videos], shuffled_acc[videos]
    return replace(batch, rewards=rewards).with_metrics(
        **{
            "tgrpo/ordered_acc": float(p.mean()),
            "tgrpo/shuffled_acc": float(p_shuffled.mean()),
            "tgrpo/passed_frac": float((p >= config.margin * p_shuffled).float().mean()),
            "tgrpo/bonus_frac": float((bonus[in_video] > 0).float().mean())
            if bool(in_video.any())
            else 0.0,
            "tgrpo/video_groups": float(len(shuffled.groups)),
        }
    )
