"""What a training step touches: the models, optimizer, data and counters of a run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from videorl.config import Config
from videorl.data.records import TaskRecord
from videorl.data.sampler import TaskGroupedSampler
from videorl.distributed import DistInfo
from videorl.models.loading import LoadedModel
from videorl.models.visual_cache import VisualCaches
from videorl.rewards.pool import ScoringPool
from videorl.rollout.engine import RolloutEngine, TokenScorer
from videorl.rollout.tools import ToolRunner
from videorl.trainer.draw import Producer
from videorl.video.cache import VideoCache
from videorl.video.prefetch import Prefetcher

if TYPE_CHECKING:
    from videorl.trainer.async_rollout import AsyncRollouts
    from videorl.trainer.oversample import CarriedGroup


@dataclass(frozen=True)
class BestStep:
    """The best validation so far by `trainer.best_metric`: the step whose model `best/`
    holds."""

    step: int
    value: float
    metric: str

    def to_dict(self) -> dict[str, Any]:
        """The checkpoint form (`state.pt`'s `best`), the mapping every version writes."""
        return {"step": self.step, "value": self.value, "metric": self.metric}

    @classmethod
    def from_dict(cls, saved: dict[str, Any] | None) -> BestStep | None:
        """A checkpoint's `best` mapping; `{}` or none (no validation yet) is None."""
        if not saved:
            return None
        return cls(int(saved["step"]), float(saved["value"]), str(saved["metric"]))


@dataclass
class TrainState:
    """Everything a step touches, built once by `build_state`."""

    cfg: Config
    policy: LoadedModel
    engine: RolloutEngine
    # The model of no-grad passes (old, sensitivity and student log-probs, best/ and final/):
    # the policy itself, or its unsharded copy under FSDP that the engine syncs each step.
    logprob_model: LoadedModel
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LambdaLR
    videos: VideoCache
    sampler: TaskGroupedSampler
    records: list[TaskRecord]
    val_records: list[TaskRecord]
    reference: LoadedModel | None = None
    teacher: LoadedModel | None = None
    # algorithm.distill.teacher_engine=vllm: the teacher's vLLM engine (None: HF forwards)
    teacher_engine: TokenScorer | None = None
    # the vision models' per-step embedding caches, which the step clears and prunes
    visual_caches: VisualCaches = field(default_factory=VisualCaches)
    pool: ScoringPool | None = None
    # rollout.tools: the tools multi-turn rollouts call (None: single-turn rollouts)
    tools: ToolRunner | None = None
    # data.prefetch_workers: decodes the next step's media ahead (None: in the step)
    prefetch: Prefetcher | None = None
    info: DistInfo = field(default_factory=DistInfo)
    step: int = 0
    best: BestStep | None = None
    # rollout.mode=async: the rollout workers and their queues (None: the trainer generates)
    rollouts: AsyncRollouts | None = None
    # a resumed async run's older weights by version, from its checkpoint (`async_weights`)
    async_weights: dict[int, dict[str, torch.Tensor]] = field(default_factory=dict)
    # and the groups its over-sampled round had cut (`async_carry`; None: none saved)
    async_carry: list[CarriedGroup] | None = None

    def producer(self) -> Producer:
        """What the trainer's own draws touch (`trainer/draw.py`)."""
        return Producer(
            self.cfg,
            self.policy,
            self.engine,
            self.logprob_model,
            self.videos,
            tools=self.tools,
            pool=self.pool,
            info=self.info,
            visual_caches=self.visual_caches,
        )

    def sampler_state(self) -> dict[str, Any]:
        """The sampler's position after the last trained step: what a checkpoint saves. Async
        workers draw ahead; their prompts in flight go back to the sampler on resume."""
        if self.rollouts is not None:
            return self.rollouts.sampler_state(self.step, self.sampler)
        return self.sampler.state_dict()

    @property
    def autocast_dtype(self) -> torch.dtype | None:
        """bf16 autocast for the policy's forwards on a GPU with `trainer.bf16`, else None."""
        return torch.bfloat16 if self.cfg.trainer.bf16 and torch.cuda.is_available() else None
