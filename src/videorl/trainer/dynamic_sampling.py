"""DAPO dynamic sampling in the step: drop zero-variance groups, refill from the next prompts.

After the reward stages (score, length terms, sensitivity) of a draw, the groups whose rows
all share `algorithm.dynamic_sampling.metric` are dropped (`zero_variance_groups`). While
fewer than this rank's share of `data.prompts_per_step` groups are kept and the cap
`max_draws` is not reached, the next `batches_per_draw` sampler batches are drawn (so they
are consumed, and a resumed run replays the same draws), decoded, rolled out and scored, and
their kept groups appended. The step then trains on exactly its number of groups, in draw
order (DAPO: `batch = batch[:traj_bsz]`). Source: verl `recipe/dapo/src/dapo_ray_trainer.py`
at 4f80e46, `RayDAPOTrainer.fit`.

Ranks draw in lockstep (vLLM's data-parallel engines and FSDP's collectives need the same
number of generate calls on every rank): whether to draw again is `all_reduce(max)` of the
ranks' "still short", so a rank that is already full draws too and keeps its first groups;
the counts below are per rank (the logged value is the ranks' mean).

Metrics: `dynamic_sampling/draws` (1 = no refill; DAPO's `train/num_gen_batches`),
`/kept_groups` (trained on), `/dropped_groups` (zero variance, over every draw), `/capped`
(1 when the cap was hit with fewer groups than the step's), `/drawn_reward_mean` (the mean
reward of every generated row drawn, before the filter: comparable with a run without
dynamic sampling). The reward stages' metrics are combined over every row drawn
(`merge_metrics`); `reward/mean` and `response/*` describe the rows trained on.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from videorl.algorithms.dynamic_sampling import DynamicSamplingConfig, zero_variance_groups
from videorl.data.sampler import TaskGroupedSampler
from videorl.distributed import all_reduce
from videorl.errors import DataError
from videorl.models.visual_cache import VisualCaches
from videorl.reduction import Metric
from videorl.rollout.batch import RolloutBatch, concat_batches

# draw(indices, draw_number) -> the scored rows of those prompts (this rank's share)
Draw = Callable[[list[int], int], RolloutBatch]


def metric_values(batch: RolloutBatch, metric: str) -> torch.Tensor:
    """Each row's value of `metric`: `reward` (the whole reward) or a reward component."""
    if metric == "reward":
        return batch.scored_rewards().float()
    missing = [i for i, c in enumerate(batch.components or []) if metric not in c]
    if batch.components is None or missing:
        row = missing[0] if missing else 0
        family = batch.records[int(batch.group_ids[row])].family.short
        names = ", ".join(sorted(batch.components[row])) if batch.components else "none"
        raise DataError(
            f"algorithm.dynamic_sampling.metric={metric!r} is not a reward component of the "
            f"{family} rows; use reward or one of theirs ({names})"
        )
    return torch.tensor([c[metric] for c in batch.components], dtype=torch.float32)


def keep_varied_groups(batch: RolloutBatch, metric: str) -> tuple[RolloutBatch, int]:
    """The batch with only its groups of non-zero metric variance (in order), and how many
    groups were dropped."""
    if not batch.num_rows:
        return batch.take_groups([]), 0
    keep = zero_variance_groups(metric_values(batch, metric), batch.group_ids, batch.num_groups)
    kept = keep.nonzero().flatten().tolist()
    return batch.take_groups(kept), batch.num_groups - len(kept)


def collect_groups(
    indices: list[int],
    draw: Draw,
    config: DynamicSamplingConfig,
    *,
    want: int,
    sampler: TaskGroupedSampler,
    visual_caches: VisualCaches,
) -> RolloutBatch:
    """Draw until this rank keeps `want` non-zero-variance groups (its share of
    `data.prompts_per_step`) or the cap, then cut to exactly that many. `indices` is the
    loop's batch; a draw of `batches_per_draw` > 1 adds the next `sampler` batches to it.
    The step's `visual_caches` keep only the kept groups' videos. The `dynamic_sampling/*`
    metrics describe the draws (`scope="draw"`): a step left without rows reports them."""
    kept: list[RolloutBatch] = []
    dropped, draws, have, drawn = 0, 0, 0, []
    while True:
        scored = draw(_draw_indices(sampler, config, indices, draws), draws)
        if scored.rewards is not None:  # the policy's own rows (as `reward/mean`)
            drawn.append(scored.rewards[~(scored.is_annotation | scored.off_policy)])
        batch, gone = keep_varied_groups(scored, config.metric)
        kept.append(batch)
        kept_prompts = [p for b in kept for p in b.prompts]  # dropped videos leave the cache
        visual_caches.retain(kept_prompts)
        draws, dropped, have = draws + 1, dropped + gone, have + batch.num_groups
        short = have < want
        can_draw = config.max_draws == 0 or draws < config.max_draws
        if not all_reduce(float(short and can_draw), "max"):
            break
    capped = all_reduce(float(short), "max") > 0
    if capped and config.on_cap == "error":
        raise DataError(
            f"dynamic sampling kept {have} of {want} groups after "
            f"algorithm.dynamic_sampling.max_draws={config.max_draws} draws (each dropped "
            f"group's rows all had one {config.metric} value); raise max_draws (0 = no limit), "
            "set algorithm.dynamic_sampling.on_cap=train, or check the data and rewards"
        )
    merged = concat_batches(kept)
    batch = merged.take_groups(list(range(min(have, want))))
    figures = {
        "draws": float(draws),
        "kept_groups": float(batch.num_groups),
        "dropped_groups": float(dropped),
        "capped": float(capped),
        "drawn_reward_mean": _mean(drawn),
    }
    return batch.with_metrics(
        **{f"dynamic_sampling/{k}": Metric(v, scope="draw") for k, v in figures.items()}
    )


def _mean(parts: list[torch.Tensor]) -> float:
    values = torch.cat(parts) if parts else torch.zeros(0)
    return float(values.mean()) if values.numel() else 0.0


def _draw_indices(
    sampler: TaskGroupedSampler, config: DynamicSamplingConfig, indices: list[int], draw: int
) -> list[int]:
    """Draw 0: the loop's batch plus `batches_per_draw - 1` more; later draws:
    `batches_per_draw` new sampler batches."""
    first = [indices] if draw == 0 else []
    extra = [sampler.next_batch() for _ in range(config.batches_per_draw - len(first))]
    return [i for batch in first + extra for i in batch]
