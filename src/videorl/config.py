"""The job configuration: one tree of frozen dataclasses, loaded from YAML + overrides.

    config = load_config("configs/quickstart.yaml", ["rollout.n=4", "trainer.steps=3"])

Sections: model, data, video, rollout, reward, algorithm, optim, trainer, eval, sft. Each
section validates itself in `__post_init__`; `Config.__post_init__` checks combinations
(e.g. OraRL selection quotas against the group size).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from videorl.algorithms.distill import DistillConfig
from videorl.algorithms.loss import PolicyLossConfig
from videorl.algorithms.orarl import OraRLConfig
from videorl.algorithms.selection import CorrectionConfig, SelectionConfig
from videorl.algorithms.taro import CurriculumConfig, OffPolicyConfig
from videorl.config_loader import build, merge_sources
from videorl.data.families import parse_family
from videorl.errors import ConfigError
from videorl.rewards.config import RewardConfig
from videorl.video.decode import VideoConfig


def _positive(section: str, **values: float) -> None:
    for name, value in values.items():
        if value <= 0:
            raise ConfigError(f"{section}.{name}={value} must be > 0")


@dataclass(frozen=True)
class ModelConfig:
    """The policy and the optional frozen reference (KL) and teacher (distillation)."""

    path: str = "runs/tiny-model"
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    reference_path: str | None = None
    teacher_path: str | None = None
    freeze_vision: bool = True
    gradient_checkpointing: bool = False
    # Attention kernel. sdpa_varlen = sdpa, plus per-row attention for packed rows (any
    # device); flash_attention_2/3 need a CUDA GPU and their package.
    attn_implementation: Literal[
        "sdpa", "sdpa_varlen", "eager", "flex_attention", "flash_attention_2", "flash_attention_3"
    ] = "sdpa_varlen"
    # Padding-free packed rows in log-prob/training forwards: auto = with a varlen
    # (flash-attention) kernel where the model supports it; true = wherever supported.
    packing: Literal["auto"] | bool = "auto"


@dataclass(frozen=True)
class DataConfig:
    """Training and validation records (any supported format) and how prompts are drawn."""

    train: str = ""
    val: str | None = None
    format: Literal["auto", "records", "vtg", "timer1", "mcq", "math"] = "auto"
    family: str | None = None
    video_root: str | None = None
    families: tuple[str, ...] = ()
    skip_invalid: bool = False
    prompts_per_step: int = 4
    think: bool = True
    seed: int = 0

    def __post_init__(self) -> None:
        _positive("data", prompts_per_step=self.prompts_per_step)
        for name in self.families + ((self.family,) if self.family else ()):
            parse_family(name)


@dataclass(frozen=True)
class RolloutConfig:
    """How n responses per prompt are sampled."""

    engine: Literal["hf", "vllm"] = "hf"
    n: int = 8
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    max_new_tokens: int = 256
    gpu_memory_utilization: float = 0.5
    tensor_parallel_size: int = 1
    max_model_len: int = 8192  # vLLM: longest prompt + response
    videos_per_prompt: int = 1  # vLLM's limit_mm_per_prompt
    images_per_prompt: int = 1
    vllm_sleep_level: int = 0  # GPU: 1 offloads weights, 2 drops them, from rollout to sync
    vllm_enforce_eager: bool = False
    vllm_cpu_kv_cache_gb: float = 4.0  # KV cache size when vLLM runs on the CPU

    def __post_init__(self) -> None:
        _positive(
            "rollout", n=self.n, temperature=self.temperature, max_new_tokens=self.max_new_tokens
        )
        if not 0 < self.top_p <= 1:
            raise ConfigError(f"rollout.top_p={self.top_p} must be in (0, 1]")
        if not 0 < self.gpu_memory_utilization <= 1:
            raise ConfigError(
                f"rollout.gpu_memory_utilization={self.gpu_memory_utilization} must be in (0, 1]"
            )
        if self.vllm_sleep_level not in (0, 1, 2):
            raise ConfigError(f"rollout.vllm_sleep_level={self.vllm_sleep_level} must be 0, 1 or 2")
        _positive(
            "rollout",
            tensor_parallel_size=self.tensor_parallel_size,
            max_model_len=self.max_model_len,
            vllm_cpu_kv_cache_gb=self.vllm_cpu_kv_cache_gb,
        )


@dataclass(frozen=True)
class PruningConfig:
    """OraRL sign-balanced selection (stage D) and post-selection correction (stage E)."""

    enabled: bool = False
    prune_ratio: float = 0.5
    pos_quota: int = 1
    neg_quota: int = 2
    correction: CorrectionConfig = field(default_factory=CorrectionConfig)

    def selection(self, n: int) -> SelectionConfig:
        return SelectionConfig(
            n=n, prune_ratio=self.prune_ratio, pos_quota=self.pos_quota, neg_quota=self.neg_quota
        )


@dataclass(frozen=True)
class ConstructedConfig:
    """TaRO constructed reasoning prefixes and their curriculum (METHODS 2.3)."""

    enabled: bool = False
    curriculum: CurriculumConfig = field(default_factory=CurriculumConfig)
    off_policy: OffPolicyConfig = field(default_factory=OffPolicyConfig)


@dataclass(frozen=True)
class AlgorithmConfig:
    """Advantage estimator (by registry name) and the stages a recipe turns on."""

    estimator: str = "grpo"
    annotation_rows: bool = False
    orarl: OraRLConfig = field(default_factory=OraRLConfig)
    pruning: PruningConfig = field(default_factory=PruningConfig)
    distill: DistillConfig = field(default_factory=DistillConfig)
    constructed: ConstructedConfig = field(default_factory=ConstructedConfig)
    loss: PolicyLossConfig = field(default_factory=PolicyLossConfig)

    def __post_init__(self) -> None:
        from videorl.algorithms.advantages import get_estimator

        get_estimator(self.estimator)

    @property
    def is_distillation(self) -> bool:
        return self.estimator in ("opd", "opdvr", "grpd")


@dataclass(frozen=True)
class OptimConfig:
    """AdamW, schedule, clipping and how a step's rows are split for the update."""

    lr: float = 1e-6
    weight_decay: float = 0.0
    betas: tuple[float, float] = (0.9, 0.999)
    schedule: Literal["constant", "cosine"] = "constant"
    warmup_steps: int = 0
    min_lr_ratio: float = 0.0
    grad_clip: float = 1.0
    mini_batches: int = 1
    epochs: int = 1
    micro_batch_tokens: int = 8192

    def __post_init__(self) -> None:
        _positive(
            "optim",
            lr=self.lr,
            mini_batches=self.mini_batches,
            epochs=self.epochs,
            micro_batch_tokens=self.micro_batch_tokens,
        )


@dataclass(frozen=True)
class TrainerConfig:
    """Loop length, output, checkpoints, validation and metric sinks."""

    steps: int = 10
    output_dir: str = "runs/default"
    seed: int = 0
    device: str = "auto"
    save_every: int = 0
    keep_last: int = 2
    val_every: int = 0
    val_samples: int = 4
    val_max_prompts: int = 32
    best_metric: str = "val/reward_mean_at_k"
    tensorboard: bool = True
    wandb_project: str | None = None
    bf16: bool = False
    nproc: int = 1

    def __post_init__(self) -> None:
        _positive(
            "trainer",
            steps=self.steps,
            keep_last=self.keep_last,
            val_samples=self.val_samples,
            nproc=self.nproc,
        )


@dataclass(frozen=True)
class EvalConfig:
    """Evaluation after (or without) training."""

    benchmark: str | None = None
    max_samples: int | None = None
    batch_size: int = 8
    max_new_tokens: int = 256


@dataclass(frozen=True)
class SFTConfig:
    """`videorl sft`: supervised warm start. Each trainer step is one optimizer step over
    `data.prompts_per_step` records; the loss is the token-mean next-token NLL of the target
    response only (the prompt is context, never a label).

    target: `annotation` = the record's serialized ground truth (OraRL's annotation row);
    `constructed` = TaRO's constructed reasoning (query + dense captions), then the answer.
    """

    target: Literal["annotation", "constructed"] = "annotation"
    max_response_tokens: int = 256  # targets longer than this (EOS included) are cut

    def __post_init__(self) -> None:
        _positive("sft", max_response_tokens=self.max_response_tokens)


@dataclass(frozen=True)
class Config:
    """The whole job."""

    model: ModelConfig = field(default_factory=ModelConfig)
    data: DataConfig = field(default_factory=DataConfig)
    video: VideoConfig = field(default_factory=VideoConfig)
    rollout: RolloutConfig = field(default_factory=RolloutConfig)
    reward: RewardConfig = field(default_factory=RewardConfig)
    algorithm: AlgorithmConfig = field(default_factory=AlgorithmConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    trainer: TrainerConfig = field(default_factory=TrainerConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    sft: SFTConfig = field(default_factory=SFTConfig)

    def __post_init__(self) -> None:
        algo = self.algorithm
        if algo.pruning.enabled:
            if not algo.annotation_rows:
                raise ConfigError(
                    "algorithm.pruning.enabled=true needs algorithm.annotation_rows=true "
                    "(sign-balanced selection always keeps the annotation row)"
                )
            algo.pruning.selection(self.rollout.n)
        if algo.estimator == "orarl" and not algo.annotation_rows:
            raise ConfigError("algorithm.estimator=orarl needs algorithm.annotation_rows=true")
        if algo.is_distillation and not self.model.teacher_path:
            raise ConfigError(
                f"algorithm.estimator={algo.estimator} needs model.teacher_path (a teacher with the same tokenizer)"
            )
        if algo.constructed.enabled and algo.annotation_rows:
            raise ConfigError(
                "algorithm.constructed.enabled and algorithm.annotation_rows are separate recipes (TaRO vs OraRL); enable one"
            )
        rows_per_step = self.data.prompts_per_step * (self.rollout.n + int(algo.annotation_rows))
        if rows_per_step % self.optim.mini_batches:
            raise ConfigError(
                f"optim.mini_batches={self.optim.mini_batches} must divide the rows per step "
                f"({self.data.prompts_per_step} prompts x {self.rollout.n + int(algo.annotation_rows)} rows = {rows_per_step})"
            )
        if self.data.prompts_per_step % self.trainer.nproc:
            raise ConfigError(
                f"data.prompts_per_step={self.data.prompts_per_step} must be divisible by trainer.nproc={self.trainer.nproc} "
                "(whole groups stay on one rank)"
            )

    def rows_kept_per_group(self) -> int:
        """Rows per group that reach the backward pass."""
        group = self.rollout.n + int(self.algorithm.annotation_rows)
        if not self.algorithm.pruning.enabled:
            return group
        return self.algorithm.pruning.selection(self.rollout.n).k


def load_config(path: str | Path | None, overrides: Sequence[str] = ()) -> Config:
    """Load a YAML recipe and apply dotted overrides; raise a one-line `ConfigError`."""
    return build(Config, merge_sources(path, overrides))


RUN_CONFIG = "config.yaml"  # the resolved config, written into each training run's output_dir


def save_run_config(config: Config, output_dir: str | Path) -> Path:
    """Write the resolved config to `output_dir/config.yaml` (atomically)."""
    import os

    import yaml

    from videorl.config_loader import to_dict

    path = Path(output_dir) / RUN_CONFIG
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".yaml.tmp")
    tmp.write_text(yaml.safe_dump(to_dict(config), sort_keys=False))
    os.replace(tmp, path)
    return path


def find_run_config(model_dir: str | Path) -> Path | None:
    """The training run's config for a model folder it wrote (`final/`, `best/`,
    `step-N/model/`): `config.yaml` in the folder or up to two levels above it."""
    folder = Path(model_dir).resolve()
    for candidate in (folder, folder.parent, folder.parent.parent):
        path = candidate / RUN_CONFIG
        if path.is_file():
            return path
    return None
