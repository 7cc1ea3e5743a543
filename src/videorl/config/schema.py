"""The job configuration: one tree of frozen dataclasses, loaded from YAML + overrides.

    config = load_config("configs/quickstart.yaml", ["rollout.n=4", "trainer.steps=3"])

Sections: model, data, video, rollout, reward, algorithm, optim, trainer, sft
(config/sections.py and the packages that own theirs). Each section checks itself when
built; `Config.__post_init__` checks combinations (e.g. OraRL selection quotas against the
group size).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from videorl.algorithms.selection import PruningConfig
from videorl.config.keys import RETIRED_SECTIONS
from videorl.config.loader import build, merge_sources
from videorl.config.sections import (
    GOLD_TOOLS,
    AlgorithmConfig,
    DataConfig,
    ModelConfig,
    OptimConfig,
    RolloutConfig,
    SFTConfig,
    TrainerConfig,
)
from videorl.errors import ConfigError
from videorl.rewards.config import RewardConfig
from videorl.video.decode import VideoConfig


@dataclass(frozen=True)
class Config:
    """The whole job."""

    model: ModelConfig = field(default_factory=ModelConfig)
    """The policy and the optional frozen reference (KL) and teacher (distillation)."""
    data: DataConfig = field(default_factory=DataConfig)
    """Training and validation records (any supported format) and how prompts are drawn."""
    video: VideoConfig = field(default_factory=VideoConfig)
    """How videos are decoded, sampled, resized and cached."""
    rollout: RolloutConfig = field(default_factory=RolloutConfig)
    """How n responses per prompt are sampled."""
    reward: RewardConfig = field(default_factory=RewardConfig)
    """How responses are scored."""
    algorithm: AlgorithmConfig = field(default_factory=AlgorithmConfig)
    """Advantage estimator (by registry name) and the stages a recipe turns on."""
    optim: OptimConfig = field(default_factory=OptimConfig)
    """AdamW, schedule, clipping and how a step's rows are split for the update."""
    trainer: TrainerConfig = field(default_factory=TrainerConfig)
    """Loop length, output, checkpoints, validation and metric sinks."""
    sft: SFTConfig = field(default_factory=SFTConfig)
    """`videorl sft`: supervised warm start. Each trainer step is one optimizer step over
    `data.prompts_per_step` records; the loss is the token-mean next-token NLL of the target
    response only (the prompt is context, never a label)."""

    def __post_init__(self) -> None:
        algo = self.algorithm
        if algo.pruning.enabled:
            if not algo.annotation_rows:
                raise ConfigError(
                    "algorithm.pruning.enabled=true needs algorithm.annotation_rows=true "
                    "(sign-balanced selection always keeps the annotation row)"
                )
            _check_quotas(algo.pruning, self.rollout.n)
        if algo.estimator == "orarl" and not algo.annotation_rows:
            raise ConfigError("algorithm.estimator=orarl needs algorithm.annotation_rows=true")
        if algo.is_distillation and algo.distill.topk > 0:
            raise ConfigError(
                f"algorithm.distill.topk={algo.distill.topk}: the trainer scores the sampled "
                "token only (OPDVR's paper method); top-k OPD (the 'Top-64 OPD' baseline) is "
                "not implemented end to end, set algorithm.distill.topk=0"
            )
        if algo.is_distillation and not self.model.teacher_path:
            raise ConfigError(
                f"algorithm.estimator={algo.estimator} needs model.teacher_path (a teacher with the same tokenizer)"
            )
        if self.rollout.include_subagent_in_loss and (algo.is_distillation or algo.pruning.enabled):
            raise ConfigError(
                "rollout.include_subagent_in_loss=true adds sub-agent rows after the advantages; "
                f"algorithm.estimator={algo.estimator} (distillation or OraRL pruning) scores "
                "rows it cannot have; set rollout.include_subagent_in_loss=false"
            )
        if algo.constructed.enabled and algo.annotation_rows:
            raise ConfigError(
                "algorithm.constructed.enabled and algorithm.annotation_rows are separate recipes (TaRO vs OraRL); enable one"
            )
        rows_per_step = self.data.prompts_per_step * self.group_size
        if rows_per_step % self.optim.mini_batches:
            raise ConfigError(
                f"optim.mini_batches={self.optim.mini_batches} must divide the rows per step "
                f"({self.data.prompts_per_step} prompts x {self.group_size} rows = {rows_per_step})"
            )
        # trainer.nproc=1 may be a torchrun launch that leaves it unset: run_training checks
        # the sequence-parallel size against the real world size
        sp = self.model.sequence_parallel_size if self.trainer.nproc > 1 else 1
        check_world_size(self.data, self.trainer.nproc, sp)
        if self.model.sequence_parallel_size > 1 and self.rollout.engine != "hf":
            raise ConfigError(
                f"model.sequence_parallel_size={self.model.sequence_parallel_size} needs "
                "rollout.engine=hf (a sequence-parallel group's first rank generates for it); "
                "set rollout.engine=hf or model.sequence_parallel_size=1"
            )
        if self.model.sequence_parallel_size > 1 and algo.is_distillation:
            _check_sp_teacher(algo, self.model.sequence_parallel_size)
        budget_key = "rollout.max_total_tokens" if self.rollout.tools else "rollout.max_new_tokens"
        _check_length_terms(self.reward, self.rollout.response_budget, budget_key)
        if self.rollout.tools:
            _check_multiturn(self)
        if self.sft.target == "tool_trajectory":
            _check_gold_tool(self.rollout.tools)
        _check_dynamic_sampling(algo)
        _check_async(self)
        _check_oversample(self)

    @property
    def group_size(self) -> int:
        """Rows per group (one group per prompt): `rollout.n` sampled rows, plus OraRL's
        annotation row with `algorithm.annotation_rows`."""
        return self.rollout.n + int(self.algorithm.annotation_rows)

    def rows_kept_per_group(self) -> int:
        """Rows per group that reach the backward pass."""
        pruning = self.algorithm.pruning
        return pruning.kept_rows(self.rollout.n) if pruning.enabled else self.group_size


def _check_async(cfg: Config) -> None:
    """Refuse, in one line with the reason, what async rollouts do not support yet."""
    rollout = cfg.rollout
    if rollout.mode != "async":
        return
    if rollout.engine != "hf":
        raise ConfigError(
            f"rollout.engine={rollout.engine} with rollout.mode=async: async workers use the HF "
            "engine (vLLM's weight transfer to a worker process is not built); set "
            "rollout.engine=hf"
        )
    if cfg.model.sequence_parallel_size > 1:
        raise ConfigError(
            f"model.sequence_parallel_size={cfg.model.sequence_parallel_size} with "
            "rollout.mode=async: a sequence-parallel group shares one rank's generations, "
            "which async workers do not do yet; set model.sequence_parallel_size=1 or "
            "rollout.mode=sync"
        )
    if cfg.data.prefetch_workers:
        raise ConfigError(
            f"data.prefetch_workers={cfg.data.prefetch_workers} with rollout.mode=async: the "
            "rollout workers decode the videos themselves; set data.prefetch_workers=0"
        )
    if cfg.algorithm.dynamic_sampling.enabled and rollout.max_staleness > 0:
        raise ConfigError(
            "algorithm.dynamic_sampling with rollout.max_staleness > 0: its refills would draw "
            "past the prompts the workers drew ahead; set rollout.max_staleness=0"
        )


def _check_oversample(cfg: Config) -> None:
    """Over-sampled rounds (`trainer/oversample.py`) build single-turn policy rows (OraRL's
    annotation rows added after the cut) on one worker; refuse the rest in one line."""
    rollout = cfg.rollout
    if rollout.oversample == 1:
        if rollout.partial == "continue":
            raise ConfigError(
                "rollout.partial=continue with rollout.oversample=1: only an over-sampled round "
                "cuts groups; set rollout.oversample >= 2 or rollout.partial=restart"
            )
        return
    algorithm = cfg.algorithm
    refused = {
        "rollout.mode=sync": rollout.mode != "async",
        "rollout.tools": bool(rollout.tools),
        f"rollout.workers={rollout.workers}": rollout.workers > 1,
        "algorithm.temporal_contrast": algorithm.temporal_contrast.enabled,
        "algorithm.constructed": algorithm.constructed.enabled,
        "algorithm.dynamic_sampling": algorithm.dynamic_sampling.enabled,
    }
    for name, on in refused.items():
        if on:
            raise ConfigError(
                f"rollout.oversample={rollout.oversample} with {name}: over-sampled rounds are "
                "built for rollout.mode=async, one worker, single-turn rows without T-GRPO, "
                "TaRO's constructed rows or dynamic sampling; set rollout.oversample=1"
            )
    if rollout.partial == "continue" and rollout.max_staleness < 1:
        raise ConfigError(
            "rollout.partial=continue with rollout.max_staleness=0: a continued group's first "
            "tokens train one version late; set rollout.max_staleness >= 1"
        )


def _check_quotas(pruning: PruningConfig, n: int) -> None:
    """OraRL stage D keeps `k = pruning.kept_rows(n)` rows of a group: the annotation row,
    `pos_quota` and `neg_quota`."""
    k = pruning.kept_rows(n)
    if pruning.pos_quota + pruning.neg_quota + 1 != k:
        raise ConfigError(
            f"rollout.n={n} with algorithm.pruning.prune_ratio={pruning.prune_ratio} keeps "
            f"k={k} rows per group, which needs pos_quota + neg_quota + 1 == {k} "
            f"(got {pruning.pos_quota} + {pruning.neg_quota} + 1); set algorithm.pruning."
            f"pos_quota and algorithm.pruning.neg_quota to sum to {k - 1}"
        )


def check_world_size(data: DataConfig, world_size: int, sequence_parallel: int = 1) -> None:
    """The ranks form data-parallel groups of `sequence_parallel` ranks each (one rank each
    without sequence parallelism), and whole prompt groups stay on one of them:
    `data.prompts_per_step` splits evenly over the data-parallel groups."""
    sp = sequence_parallel
    if world_size % sp:
        raise ConfigError(
            f"model.sequence_parallel_size={sp} must divide the {world_size} ranks "
            f"(trainer.nproc); use a multiple of {sp} ranks or a size that divides {world_size}"
        )
    if data.prompts_per_step % (world_size // sp):
        where = (
            f"{world_size} ranks (trainer.nproc"
            if sp == 1
            else f"{world_size // sp} data-parallel groups (trainer.nproc / {sp}"
        )
        raise ConfigError(
            f"data.prompts_per_step={data.prompts_per_step} must be divisible by the "
            f"{where}; whole groups stay on one rank)"
        )


def _check_sp_teacher(algo: AlgorithmConfig, size: int) -> None:
    """A vLLM teacher scores whole rows on each rank: sequence parallelism splits HF forwards."""
    if algo.distill.teacher_engine == "vllm":
        raise ConfigError(
            f"model.sequence_parallel_size={size} needs algorithm.distill.teacher_engine=hf "
            "(a vLLM teacher scores whole rows on every rank, unsplit); set "
            "algorithm.distill.teacher_engine=hf or model.sequence_parallel_size=1"
        )


def _check_multiturn(config: Config) -> None:
    """Stages that re-score or re-generate a row from its group's prompt alone do not take
    multi-turn rows (their tool turns hold media the prompt does not); validation with tools
    (when it runs) measures no video controls."""
    algo = config.algorithm
    refused = {
        "algorithm.constructed.enabled": algo.constructed.enabled,
        "algorithm.temporal_contrast.enabled": algo.temporal_contrast.enabled,
        "reward.sensitivity.enabled": config.reward.sensitivity.enabled,
        "algorithm.distill.teacher_engine=vllm": algo.is_distillation
        and algo.distill.teacher_engine == "vllm",
    }
    on = [key for key, enabled in refused.items() if enabled]
    if on:
        raise ConfigError(
            f"rollout.tools={list(config.rollout.tools)} cannot be combined with "
            f"{', '.join(on)} (not built for multi-turn rows); turn it off or set rollout.tools=[]"
        )


def _check_length_terms(
    reward: RewardConfig, budget: int, key: str = "rollout.max_new_tokens"
) -> None:
    """The length reward terms must fit the response budget (verl's DAPO reward manager
    asserts max_resp_len >= overlong_buffer.len)."""
    if reward.overlong.enabled and reward.overlong.buffer_len > budget:
        raise ConfigError(
            f"reward.overlong.buffer_len={reward.overlong.buffer_len} exceeds "
            f"{key}={budget}; set a buffer within the budget (DAPO: 4096 of 20480)"
        )
    if reward.length_band.enabled and reward.length_band.min > budget:
        raise ConfigError(
            f"reward.length_band.min={reward.length_band.min} exceeds {key}="
            f"{budget}, so no response can earn the bonus; lower it or raise the budget"
        )


def _check_gold_tool(tools: Sequence[str]) -> None:
    """sft.target=tool_trajectory calls the first tool of rollout.tools with a gold plan."""
    if not any(name in GOLD_TOOLS for name in tools):
        raise ConfigError(
            f"sft.target=tool_trajectory calls one of {list(GOLD_TOOLS)} (rollout/tools/"
            f"gold.py), and rollout.tools={list(tools)} lists none; set e.g. "
            "rollout.tools=[get_clip]"
        )


def _check_dynamic_sampling(algo: AlgorithmConfig) -> None:
    """DAPO's filter needs groups of sampled rows only: an OraRL annotation row (the ground
    truth, scored high) gives almost every group reward variance, so nothing would be
    filtered, and the groups it exists to rescue (all rollouts wrong) are the ones DAPO drops."""
    if algo.dynamic_sampling.enabled and (algo.annotation_rows or algo.pruning.enabled):
        raise ConfigError(
            "algorithm.dynamic_sampling.enabled=true cannot be combined with "
            "algorithm.annotation_rows / algorithm.pruning (OraRL's annotation row gives "
            "every group reward variance); set algorithm.annotation_rows=false and "
            "algorithm.pruning.enabled=false, or turn dynamic sampling off"
        )


def load_config(path: str | Path | None, overrides: Sequence[str] = ()) -> Config:
    """Load a YAML recipe and apply dotted overrides; raise a one-line `ConfigError`."""
    source = merge_sources(path, overrides)
    for section in RETIRED_SECTIONS:
        source.pop(section, None)
    data = source.get("data")
    if isinstance(data, dict) and isinstance(data.get("families"), str):
        # `data.families=all` or `tg,sg`, spelled as `videorl synth --families` takes them
        names = [n.strip() for n in data["families"].split(",") if n.strip()]
        data["families"] = [] if names == ["all"] else names
    return build(Config, source)
