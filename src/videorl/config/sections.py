"""The job's own config sections (model, data, rollout, algorithm, optim, trainer, sft), each
a frozen dataclass that checks its declared ranges and choices when built
(config/constraints.py) and, in `__post_init__`, what those cannot say (a pattern, a
value across its fields). The sections that lower packages own (video, reward, the
algorithm stages, LoRA) are imported; `schema.Config` composes them all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from videorl.algorithms.advantages import GRPOConfig, get_estimator
from videorl.algorithms.distill import DistillConfig
from videorl.algorithms.dynamic_sampling import DynamicSamplingConfig
from videorl.algorithms.loss import PolicyLossConfig
from videorl.algorithms.orarl import OraRLConfig
from videorl.algorithms.selection import PruningConfig
from videorl.algorithms.taro import CurriculumConfig, OffPolicyConfig
from videorl.algorithms.tgrpo import TemporalContrastConfig
from videorl.config.constraints import Between, Checked, Ge, Gt, OneOf, Range
from videorl.data.columns import ColumnsConfig
from videorl.data.coordinates import CoordinateMode
from videorl.data.families import parse_family
from videorl.data.prompts import PromptStyle
from videorl.data.sampler import SamplerName
from videorl.errors import ConfigError
from videorl.models.generate import SamplingParams
from videorl.models.lora import LoraSettings
from videorl.video.controls import Control, check_controls

MAX_SEED = 2**63 - 1  # torch.manual_seed and numpy's SeedSequence accept 0..2**63-1 here
SEED = Range(ge=0, le=MAX_SEED, shown="an integer in [0, 2**63 - 1]")
DEVICE = re.compile(r"^(auto|cpu|mps|(cuda|xpu)(:\d+)?)$")


def check_device_available(key: str, device: str) -> None:
    """At run time (not at load time: a config may be checked on a machine without the
    accelerator): a `cuda`/`cuda:N` device must exist here."""
    if not device.startswith("cuda"):
        return
    import torch

    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    index = int(device.partition(":")[2] or 0)
    if index >= count:
        raise ConfigError(
            f"{key}={device!r} but this machine has {count} CUDA device(s); "
            "use auto, cpu or an index below the count"
        )


def check_device(key: str, device: str) -> None:
    """auto | cpu | mps | cuda | cuda:N | xpu | xpu:N."""
    if not DEVICE.match(device):
        raise ConfigError(
            f"{key}={device!r} is not a device; use auto, cpu, cuda, cuda:N, mps or xpu"
        )


def _require_module(module: str, key: str, extra: str) -> None:
    """An optional integration fails here, when the config loads, not after the model."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise ConfigError(
            f"{key} needs {module}, which is not installed: pip install 'videorl[{extra}]' "
            "(or drop the setting)"
        )


@dataclass(frozen=True)
class ModelConfig(Checked, section="model"):
    """The policy and the optional frozen reference (KL) and teacher (distillation)."""

    path: str = "runs/tiny-model"
    """The policy: a local Hugging Face folder, a Hub id (`org/name`, `org/name@rev`) or a folder a
    run wrote."""
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    """Weight dtype the policy (and reference and teacher) load in."""
    reference_path: str | None = None
    """Frozen KL reference model; null = none (with LoRA: the base, adapters off). Used when
    algorithm.loss.kl_coef > 0."""
    teacher_path: str | None = None
    """Teacher model of the distillation estimators (OPD, OPDVR, GRPD); same tokenizer as the
    policy. Required by them, unused otherwise."""
    freeze_vision: bool = True
    """Freeze the vision tower (every parameter named `visual*`, its merger included)."""
    gradient_checkpointing: bool = False
    """Recompute activations in the backward pass: less memory, more compute."""
    attn_implementation: Literal[
        "sdpa", "sdpa_varlen", "eager", "flex_attention", "flash_attention_2", "flash_attention_3"
    ] = "sdpa_varlen"
    """Attention kernel. sdpa_varlen = sdpa, plus per-row attention for packed rows (any device);
    flash_attention_2/3 need a CUDA GPU and their package."""
    packing: Literal["auto"] | bool = "auto"
    """Padding-free packed rows in log-prob/training forwards: auto = with a varlen
    (flash-attention) kernel where the model supports it; true = wherever supported."""
    revision: str | None = None
    """Hub revision (branch, tag or commit) of model.path when it is a Hugging Face Hub id;
    `org/name@rev` in any model path does the same."""
    lora: LoraSettings = field(default_factory=LoraSettings)
    """LoRA adapters (peft): rank > 0 trains adapters only; the KL reference is the base with the
    adapters off; runs save adapter folders (`videorl merge` makes full ones)."""
    reuse_visual_embeddings: bool = True
    """Encode each distinct video once per step and reuse its vision-tower output in every forward
    of the step (a trainable tower is recomputed with gradients in the update)."""
    share_prompt_forward: bool = True
    """Rows of one prompt run its forward once (log-prob passes and the update) and attend to its
    expanded KV cache; same values up to float order (models/shared_prompt.py)."""
    sequence_parallel_size: Annotated[int, Gt(0)] = 1
    """Ulysses sequence parallelism (docs/sequence_parallel.md): the text model's sequence of
    every training and log-prob forward is split over groups of this many ranks (world =
    data-parallel x this); it must divide trainer.nproc and the attention heads. 1 = off.
    Qwen2.5-VL and Qwen3-VL with rollout.engine=hf; turns share_prompt_forward off."""


@dataclass(frozen=True)
class DataConfig(Checked, section="data"):
    """Training and validation records (any supported format) and how prompts are drawn."""

    train: str = ""
    """Training records: a file (JSONL, JSON, Parquet, ...), a folder or a Hugging Face dataset id
    (`org/name@split`)."""
    val: str | None = None
    """Validation records (same forms as data.train); null = no validation set."""
    format: Literal[
        "auto",
        "records",
        "vtg",
        "timer1",
        "mcq",
        "math",
        "columns",
        "easyr1",
        "verl",
        "orarl",
        "video_r1",
    ] = "auto"
    """columns/easyr1/verl/orarl: column-mapped rows with media lists (data/columns.py)"""
    family: str | None = None
    """Task family for rows that do not name one (e.g. temporal_grounding, video_qa, math); null =
    each row's own."""
    video_root: str | None = None
    """Folder that relative video and image paths in the records resolve against; null = the data
    file's folder."""
    families: tuple[str, ...] = ()
    """Keep only records of these task families (a list, or `all` / `tg,sg` as `videorl synth
    --families` spells them); empty = all. A run logs how many records the filter left out."""
    skip_invalid: bool = False
    """Skip (and count) records that fail to parse instead of stopping with an error."""
    prompts_per_step: Annotated[int, Gt(0)] = 4
    """Prompts per training step; each gets rollout.n responses. Must divide evenly over
    trainer.nproc ranks."""
    think: bool = True
    """Ask for a `<think>` reasoning block before the answer (and enable the template's thinking
    mode)."""
    seed: Annotated[int, SEED] = 0
    """Seed of the prompt sampler's shuffling."""
    columns: ColumnsConfig = field(default_factory=ColumnsConfig)
    """Column names of verl/EasyR1/OraRL-style rows (data.columns.prompt=problem, ...)."""
    split: str = "train"
    """Split of a Hugging Face dataset or of a folder whose file names carry splits
    (`org/name@split` in data.train / data.val wins)."""
    val_split: str = "validation"
    """Split of data.val read from a Hugging Face dataset or split-named folder."""
    streaming: bool = False
    """Hugging Face Hub datasets: read rows without a full download"""
    max_rows: Annotated[int | None, Gt(0)] = None
    """read at most this many rows of each of data.train / data.val"""
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)
    """Extra chat-template variables; `enable_thinking` follows `think` unless set here (OPDVR/GRPD:
    {enable_thinking: false}, as their data.apply_chat_template_kwargs)."""
    prompt_style: PromptStyle = "videorl"
    """Prompt templates: videorl (ours), orarl, taro, video_r1 or videoauto_r1 (the published
    ones, data.published_prompts; videoauto_r1 adds VideoAuto-R1's answer-twice system turn). Rows that carry their own prompt (verl chats, TaRO rows, EasyR1 rows
    in their format prompt) use it as given; OraRL-Data rows use orarl's."""
    video_as_images: bool = False
    """Give the prompt's video to the model as one image per frame instead of one video (LongVT's
    `data.sglang_video=True`): each frame gets its own image tokens, no temporal merge."""
    frame_budgets: Annotated[tuple[int, ...], Ge(1)] = ()
    """ParaVT's nFrames gating (docs/tools.md#paravt): each training prompt's video keeps K of its
    decoded frames, evenly spaced, K drawn per record from this list by a stable hash of its id and
    data.seed (the same K for the whole group and every epoch); ParaVT: [4, 8, 16, 32, 64].
    () = every frame. Validation and eval keep every frame."""
    format_prompt: str = "auto"
    """EasyR1 rows (data.format=easyr1): the format prompt around `problem`, as EasyR1's
    data.format_prompt: math / r1v (its examples/format_prompt/*.jinja), none (the problem as
    given), a path to a .jinja file, or auto: math for text math (its \\boxed{} reward), r1v for
    video families (<think> then <answer>, what their rewards read)."""
    shuffle: bool = True
    """False: records in file order each epoch (OPDVR: data.shuffle=False)"""
    coordinates: CoordinateMode = "auto"
    """Box coordinates: auto = the model family's (Qwen2.5-VL pixels of the resized input, Qwen3-VL
    / Qwen3.5 0-1000; data.coordinates), record = each record's own box_format."""
    max_prompt_tokens: Annotated[int | None, Gt(0)] = None
    """Longest prompt (tokens, video included); a longer one is skipped or trimmed
    (data.long_prompts) and counted (data/skipped_long_prompts_total,
    data/trimmed_long_prompts). null = no limit."""
    long_prompts: Literal["skip", "trim"] = "skip"
    """A prompt over data.max_prompt_tokens: skip it, or trim = keep fewer of its video's frames
    (the same uniform stride, their true timestamps) until it fits, at least 2 (then skip)."""
    group_by_family: bool = True
    """false: batches draw from all records, not one family at a time, so images and videos of
    different tasks share a step (Video-R1 samples its mixed 260k set this way)."""
    sampler: SamplerName = "videorl"
    """Batch order: videorl (one family per batch, a short last batch topped up) or orarl (OraRL's
    TaskGroupedBatchSampler: one problem_type per batch, spatial-intelligence subtypes apart,
    groups sorted by name, torch.randperm from one generator, incomplete batches dropped;
    data/sampler.py)."""
    prefetch_workers: Annotated[int, Ge(0)] = 0
    """Worker processes that decode the next step's videos and images while this step computes
    (into the decode cache, video.cache_bytes); the same frames and metrics as 0 = decode in the
    step (docs/long_videos.md)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        from videorl.data.published_prompts import load_format_prompt
        from videorl.models.chat_template import check_template_kwargs

        if self.sampler == "orarl" and not self.group_by_family:
            raise ConfigError(
                "data.sampler=orarl groups batches by problem_type; set data.group_by_family=true "
                "or data.sampler=videorl"
            )
        load_format_prompt(self.format_prompt)
        check_template_kwargs(self.chat_template_kwargs)
        for key, names in (("families", self.families), ("family", (self.family or "",))):
            for name in filter(None, names):
                try:
                    parse_family(name)
                except ConfigError as err:
                    raise ConfigError(f"data.{key}: {err}") from None


@dataclass(frozen=True)
class FrameSearchConfig(Checked, section="rollout.frame_search"):
    """TimeSearch-R's `seek_video_frames` tool (`rollout/tools/timesearch.py`): an embedding
    index of each video's frames, cached on disk under the run folder, and the completeness
    self-verification pass (GRPO-CSV, `rollout/verification.py`)."""

    embedder: str = "colors"
    """Frame and query embeddings: colors (a deterministic stand-in for the synthetic videos:
    the share of each named colour in a frame, and the colours a query names) or
    hf:<path or Hub id> of a CLIP/SigLIP model (TimeSearch-R: google/siglip-so400m-patch14-384)."""
    fps: Annotated[float, Gt(0)] = 2.0
    """Frames per second of the index (TimeSearch-R's frame cache: 2)."""
    max_frames: Annotated[int, Gt(0)] = 768
    """Most frames one video's index holds (TimeSearch-R: --max_frames 768)."""
    cache_mb: Annotated[float, Ge(0)] = 256.0
    """Disk the cached indexes may take under <trainer.output_dir>/frame_index; the oldest go first."""
    verify: bool = False
    """Completeness self-verification: after each multi-turn row, the same policy answers the
    question from only the frames the row's tools returned (one more generation per row); the
    answer reaches reward plug-ins as the row's last call (`rewards/calls.py`)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if not (self.embedder == "colors" or self.embedder.startswith("hf:")):
            raise ConfigError(
                f"rollout.frame_search.embedder={self.embedder!r}; use colors or "
                "hf:<path or Hub id> of a CLIP/SigLIP model"
            )


@dataclass(frozen=True)
class RolloutConfig(Checked, section="rollout"):
    """How n responses per prompt are sampled."""

    engine: Literal["hf", "vllm"] = "hf"
    """Generation engine: hf (transformers, any device) or vllm (GPU, or vLLM's CPU build)."""
    n: Annotated[int, Gt(0)] = 8
    """Responses sampled per prompt (the group size)."""
    temperature: Annotated[float, Gt(0)] = 1.0
    """Sampling temperature."""
    top_p: Annotated[float, Between(0, 1, low_open=True)] = 1.0
    """Nucleus sampling mass; 1 = off."""
    top_k: Annotated[int, Ge(0)] = 0
    """Sample from the k most likely tokens; 0 = off."""
    max_new_tokens: Annotated[int, Gt(0)] = 256
    """Response budget in tokens; longer responses are cut."""
    gpu_memory_utilization: Annotated[float, Between(0, 1, low_open=True)] = 0.5
    """vLLM: fraction of GPU memory it may take."""
    tensor_parallel_size: Annotated[int, Gt(0)] = 1
    """vLLM: GPUs one engine shards the model over."""
    max_model_len: Annotated[int, Gt(0)] = 8192
    """vLLM: longest prompt + response"""
    videos_per_prompt: Annotated[int, Gt(0)] = 1
    """vLLM's limit_mm_per_prompt"""
    images_per_prompt: Annotated[int, Ge(0)] = 1
    """vLLM's limit_mm_per_prompt for images."""
    vllm_sleep_level: Annotated[int, OneOf(0, 1, 2)] = 0
    """GPU: 1 offloads weights, 2 drops them, from rollout to sync"""
    vllm_enforce_eager: bool = False
    """vLLM: run without CUDA graphs (slower, less memory, faster start)."""
    vllm_cpu_kv_cache_gb: Annotated[float, Gt(0)] = 4.0
    """KV cache size when vLLM runs on the CPU"""
    share_prefill: bool = True
    """HF engine: prefill each prompt once for its n samples"""
    tools: tuple[str, ...] = ()
    """Tools the model may call (docs/tools.md): registered names such as get_clip, get_frame,
    crop; each row becomes a multi-turn rollout. Empty = single-turn."""
    tool_modules: tuple[str, ...] = ()
    """Modules imported before rollout.tools is checked, so that their @register_tool tools
    exist (e.g. my_tools for a tool defined in my_tools.py on PYTHONPATH)."""
    frame_search: FrameSearchConfig = field(default_factory=FrameSearchConfig)
    """TimeSearch-R's seek_video_frames index and completeness self-verification."""
    subagents: tuple[str, ...] = ()
    """ParaVT's sub-agents (docs/tools.md#sub-agents): tools of rollout.tools whose successful
    calls are answered by the same policy reading the call's frames in a context of its own
    (ParaVT's summary prompt); its text, not the frames, is the result the main row sees.
    Empty = every tool's media go to the main row."""
    subagent_max_new_tokens: Annotated[int | None, Gt(0)] = None
    """With rollout.subagents: most tokens a sub-agent writes; null = rollout.max_new_tokens,
    as ParaVT (the main row reads at most 512 of them either way)."""
    include_subagent_in_loss: bool = False
    """With rollout.subagents: train each sub-agent's output tokens with the advantage of the
    main row's turn that called it, its prompt masked; false (ParaVT's published trainer):
    sub-agent tokens are not trained."""
    max_turns: Annotated[int, Gt(0)] = 4
    """With rollout.tools: most model turns per row; the last may not call tools."""
    max_total_tokens: Annotated[int, Gt(0)] = 1024
    """With rollout.tools: most tokens per row after the prompt, model and tool turns together
    (max_new_tokens bounds each model turn); the length terms' budget."""
    max_calls_per_turn: Annotated[int, Gt(0)] = 4
    """With rollout.tools: most calls run per model turn, concurrently (ParaVT's parallel
    crops); further calls of that turn are errors shown to the model. 1 = one call a turn."""
    mode: Literal["sync", "async"] = "sync"
    """sync: generate, then train, in one process. async (docs/async.md): rollout worker
    processes generate while the trainer updates; a batch trains at most max_staleness policy
    versions after the weights that sampled it."""
    max_staleness: Annotated[int, Ge(0)] = 1
    """Async: most policy versions (optimizer steps) between the weights that sampled a batch
    and the update that trains on it; 0 = the synchronous run, bit for bit."""
    behaviour_logp: Literal["sampling", "recompute"] = "sampling"
    """Async, max_staleness >= 1: where the behaviour log-probs of the off-policy correction
    come from. sampling (AReaL's and verl's rollout log-probs): each sampled token's
    log-prob as the worker drew it, from the raw logits at the temperature; recompute: a
    no-grad forward over the finished rows on the weights that sampled them (one more pass
    per batch; tool-using and over-sampled rounds always recompute)."""
    sync_every: Annotated[int, Gt(0)] = 1
    """Async: the trainer publishes its weights to the workers every this many steps (>= 1,
    <= max_staleness + 1)."""
    oversample: Annotated[int, Gt(0)] = 1
    """Async (docs/async.md#the-tail): a worker's round keeps this many times a step's groups
    in flight and stops once the step's number of groups has ended, the groups the
    previous round cut among them; the rest are cut and carried to the next round. 1 = every
    group runs to its end."""
    partial: Literal["restart", "continue"] = "restart"
    """Async, rollout.oversample > 1: what a cut group carries to the next round. restart: its
    prompt only (sampled again with the next round's weights); continue: its tokens so far,
    which the next round goes on from with its weights, each token's behaviour log-prob of the
    weights that sampled it (the workers then sample max_staleness - 1 steps ahead, so that
    no token trains more than max_staleness versions late)."""
    workers: Annotated[int, Gt(0)] = 1
    """Async: rollout worker processes, each with its own model copy."""
    worker_threads: Annotated[int, Ge(0)] = 0
    """Async, CPU: intra-op threads of each worker (0 = the available cores split between the
    trainer and the workers)."""
    pin_cores: bool = True
    """Async, trainer and workers on the CPU: pin the trainer to the first of its rank's
    cores, as many as its threads, and each worker to the next block of its own, when they
    fit (else, or with false, the OS scheduler places them; unpinned, it moves the busy
    processes between cores and each runs slower)."""
    devices: tuple[str, ...] = ()
    """Async: the devices of the workers, rollout.workers per local trainer rank in rank order
    (e.g. [cuda:2, cuda:3] for 2 ranks of 1 worker); empty = the trainer's device."""
    queue_timeout_s: Annotated[float, Gt(0)] = 600.0
    """Async: the longest the trainer waits for a rollout (or a worker for new weights)
    before the run stops with an error naming the worker."""

    def sampling(self, **overrides: Any) -> SamplingParams:
        """The rollout's sampling parameters (n, length, temperature, top-p/k); `overrides`
        replace some (validation's k samples and temperature)."""
        fields = {
            "n": self.n,
            "max_new_tokens": self.max_new_tokens,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "top_k": self.top_k,
        }
        return SamplingParams(**{**fields, **overrides})

    def __post_init__(self) -> None:
        super().__post_init__()
        self._check_subagents()
        if self.sync_every > self.max_staleness + 1:
            raise ConfigError(
                f"rollout.sync_every={self.sync_every} with rollout.max_staleness="
                f"{self.max_staleness}: a batch would wait for weights never published; set "
                f"rollout.max_staleness >= {self.sync_every - 1} or rollout.sync_every <= "
                f"{self.max_staleness + 1}"
            )
        if self.devices and len(self.devices) % self.workers:
            raise ConfigError(
                f"rollout.devices={list(self.devices)} names {len(self.devices)} devices for "
                f"rollout.workers={self.workers} per trainer rank; give workers x local ranks"
            )

    def _check_subagents(self) -> None:
        if stray := [name for name in self.subagents if name not in self.tools]:
            raise ConfigError(
                f"rollout.subagents names {stray}, which rollout.tools={list(self.tools)} does "
                "not list; list each sub-agent tool in rollout.tools too"
            )
        if self.include_subagent_in_loss and not self.subagents:
            raise ConfigError(
                "rollout.include_subagent_in_loss=true trains sub-agent tokens, but "
                "rollout.subagents is empty; name the tools, e.g. rollout.subagents=[crop_video]"
            )
        if self.include_subagent_in_loss and self.mode == "async":
            raise ConfigError(
                "rollout.include_subagent_in_loss=true is not supported with rollout.mode=async "
                "(sub-agent rows carry no policy version); use rollout.mode=sync"
            )

    @property
    def response_budget(self) -> int:
        """Most tokens a row has after its prompt: the turn budget of a single-turn rollout,
        the trajectory budget of a multi-turn one (tool turns included, as verl counts)."""
        return self.max_total_tokens if self.tools else self.max_new_tokens


@dataclass(frozen=True)
class ConstructedConfig(Checked, section="algorithm.constructed"):
    """TaRO constructed reasoning prefixes and their curriculum
    (docs/methods.md#taro-constructed-rows)."""

    enabled: bool = False
    """Add TaRO's constructed reasoning rows to the groups (not with algorithm.annotation_rows)."""
    curriculum: CurriculumConfig = field(default_factory=CurriculumConfig)
    """`schedule`: `hard` (needs `warmup_epochs`) or `linear` (needs `warmup_steps` > 0)."""
    off_policy: OffPolicyConfig = field(default_factory=OffPolicyConfig)
    """`mode`: one of `mask` (default), `clone`, `awr`, `raft`. `awr_beta` is AWR's temperature and
    `awr_max_weight` caps exp(A / beta) so that a large advantage cannot overflow the loss.
    `exact`: TaRO's own formulas (`verl/trainer/ppo/core_algos.py`): `awr` uncapped, `raft` = 1
    for every row whose advantage equals its group's maximum (ties and all-equal groups
    included)."""


@dataclass(frozen=True)
class AlgorithmConfig(Checked, section="algorithm"):
    """Advantage estimator (by registry name) and the stages a recipe turns on."""

    estimator: str = "grpo"
    """Advantage estimator by registry name: grpo, dr_grpo, rloo, orarl, opd, opdvr, grpd or a
    registered plugin."""
    annotation_rows: bool = False
    """OraRL: add the ground truth as one extra row per group (n + 1 rows); needed by orarl and
    pruning."""
    turn_rewards: bool = False
    """Per-turn (per-action) credit (docs/methods/framethinker.md): a multi-turn row's tokens of
    model turn t get the advantage of the reward still to come, R minus the `turn/<k>` reward
    components of the turns k < t, against the group's R baseline; grpo and dr_grpo only. false:
    one advantage per row."""
    grpo: GRPOConfig = field(default_factory=GRPOConfig)
    """Read by grpo, dr_grpo and rloo: `std_eps` (grpo: added to the group std before dividing,
    1e-6) and `single_row` (a one-row group's A: zero, or verl's; docs/methods.md#advantage-estimators)."""
    orarl: OraRLConfig = field(default_factory=OraRLConfig)
    """Stages B and C of `orarl_advantages` (stage A has no parameters). Nested mappings (from YAML)
    are converted to the stage configs."""
    distill: DistillConfig = field(default_factory=DistillConfig)
    """`topk`: 0 = sampled token, k > 0 = top-k ids. `threshold`: a row is correct iff its verifier
    score > threshold. `gate_mode`: `default` or `inverse` (ablation: swapped gate). `group_std`:
    GRPD divides the group-relative advantage by the group std. `baseline`: GRPD's u >= 0 in
    `|a_i| + u`. `teacher_temperature`: the teacher's log-probs are `log_softmax(logits /
    teacher_temperature)`, apart from the rollout temperature the student's use (OPDVR's
    `TEACHER_TEMPERATURE`, 1.0 in opdvr.sh / grpd.sh). `teacher_engine`: `hf` scores the
    student's tokens with a Hugging Face forward of the teacher (as OPDVR's verl reward-model
    worker does), `vllm` with a vLLM engine of it (prompt log-probs of prompt + response;
    temperature 1.0 only: vLLM applies none to them)."""
    params: dict[str, Any] = field(default_factory=dict)
    """a plugin estimator's config"""
    pruning: PruningConfig = field(default_factory=PruningConfig)
    """OraRL sign-balanced selection (stage D) and post-selection correction (stage E)."""
    constructed: ConstructedConfig = field(default_factory=ConstructedConfig)
    """TaRO constructed reasoning prefixes and their curriculum
    (docs/methods.md#taro-constructed-rows)."""
    loss: PolicyLossConfig = field(default_factory=PolicyLossConfig)
    """`dual_clip` None disables the dual clip; `max_length` is the constant divisor of
    `seq-mean-token-sum-norm`; `kl_type` the KL estimator; `name` the registered surrogate (`ppo`,
    `gspo`). `clip_low`, `clip_high` and `aggregation` left unset (null) take the named loss's
    published defaults: ppo 0.2 / 0.2, `token-mean`; gspo 3e-4 / 4e-4, `seq-mean-token-mean`
    (GSPO paper section 5.1; verl `compute_policy_loss_gspo`). `gspo` has no dual clip (verl's
    has none), so `dual_clip` applies to `ppo` only."""
    temporal_contrast: TemporalContrastConfig = field(default_factory=TemporalContrastConfig)
    """T-GRPO (Video-R1): shuffled-frame rollouts per video prompt, a bonus for correct ordered rows
    when the ordered group beats the shuffled one (algorithms/tgrpo.py)."""
    dynamic_sampling: DynamicSamplingConfig = field(default_factory=DynamicSamplingConfig)
    """DAPO dynamic sampling: drop zero-variance groups, refill the step from the next prompts"""
    behaviour_is_cap: Annotated[float, Gt(1)] = 5.0
    """Async (docs/async.md#objective): cap C of the importance weight
    w = pi_proximal / pi_behaviour of a stale token."""
    behaviour_is_mode: Literal["truncate", "mask"] = "truncate"
    """Async: truncate uses min(w, C) (verl's truncated IS); mask drops tokens with w > C from
    the loss (AReaL's behav_imp_weight_cap)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.turn_rewards and self.estimator not in ("grpo", "dr_grpo"):
            raise ConfigError(
                f"algorithm.turn_rewards=true credits turns against a group baseline; "
                f"algorithm.estimator={self.estimator!r} is not grpo or dr_grpo (use one of them)"
            )
        estimator = get_estimator(self.estimator)
        if estimator.config_key is not None and self.params:
            raise ConfigError(
                f"algorithm.params={sorted(self.params)} is for plugin estimators; "
                f"algorithm.estimator={self.estimator!r} reads algorithm.{estimator.config_key}"
            )
        if estimator.config_key is None:
            estimator.make_config(self.params)  # a plugin's params: unknown keys are errors

    @property
    def estimator_config(self) -> Any:
        """The estimator's config, as the registry says: its typed section
        (`algorithm.grpo`, `.orarl`, `.distill`) or, for a plugin, `algorithm.params` built
        by `Estimator.make_config`."""
        estimator = get_estimator(self.estimator)
        if estimator.config_key is not None:
            return getattr(self, estimator.config_key)
        return estimator.make_config(self.params)

    @property
    def is_distillation(self) -> bool:
        """Token-level estimators (OPD, OPDVR, GRPD and any registered with kind="token")
        need a teacher."""
        return get_estimator(self.estimator).kind == "token"


@dataclass(frozen=True)
class OptimConfig(Checked, section="optim"):
    """AdamW, schedule, clipping and how a step's rows are split for the update."""

    lr: Annotated[float, Gt(0)] = 1e-6
    """AdamW learning rate."""
    weight_decay: Annotated[float, Ge(0)] = 0.0
    """AdamW decoupled weight decay."""
    betas: Annotated[tuple[float, float], Between(0.0, 1.0, high_open=True)] = (0.9, 0.999)
    """AdamW (beta1, beta2), each in [0, 1)."""
    schedule: Literal["constant", "cosine"] = "constant"
    """Learning-rate schedule after warm-up."""
    schedule_steps: int | None = None
    """The step at which the cosine reaches min_lr_ratio; None: trainer.steps. A published run
    stopped before its schedule ended (Video-R1: 1.2k of ~65k steps) sets it."""
    warmup_steps: Annotated[int, Ge(0)] = 0
    """Optimizer steps of linear warm-up from 0."""
    min_lr_ratio: Annotated[float, Between(0.0, 1.0)] = 0.0
    """Cosine floor as a fraction of optim.lr."""
    grad_clip: Annotated[float, Gt(0)] = 1.0
    """Global gradient-norm clip."""
    mini_batches: Annotated[int, Gt(0)] = 1
    """Optimizer steps per training step: the step's rows split into this many mini-batches (must
    divide them)."""
    epochs: Annotated[int, Gt(0)] = 1
    """Passes of the update over one step's rows."""
    micro_batch_tokens: Annotated[int, Gt(0)] = 8192
    """Token budget of one forward/backward micro-batch; gradients accumulate over micro-
    batches."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.schedule_steps is not None and self.schedule_steps <= self.warmup_steps:
            raise ConfigError(
                f"optim.schedule_steps={self.schedule_steps} must be > optim.warmup_steps="
                f"{self.warmup_steps} (or null: trainer.steps)"
            )


@dataclass(frozen=True)
class TrainerConfig(Checked, section="trainer"):
    """Loop length, output, checkpoints, validation and metric sinks."""

    steps: Annotated[int, Gt(0)] = 10
    """Training steps; replaced by trainer.epochs when that is set."""
    output_dir: str = "runs/default"
    """Run folder: config, metrics, samples, checkpoints and the final model."""
    seed: Annotated[int, SEED] = 0
    """Seed of torch, random and numpy for the run (sampling, dropout)."""
    device: str = "auto"
    """auto, cpu, mps, cuda, cuda:N, xpu or xpu:N; auto = the accelerator if any, else cpu."""
    save_every: Annotated[int, Ge(0)] = 0
    """Steps between checkpoints; 0 = only the final model."""
    keep_last: Annotated[int, Gt(0)] = 2
    """Checkpoints kept on disk; older ones are removed."""
    val_every: Annotated[int, Ge(0)] = 0
    """Steps between validations; 0 = none during training. Validation samples on random
    streams of its own, seeded by `trainer.seed` and the step, so training is the same with or
    without it."""
    val_samples: Annotated[int, Gt(0)] = 4
    """Responses sampled per validation prompt (k of mean@k)."""
    val_max_prompts: Annotated[int | None, Gt(0)] = None
    """The first N validation records; None: all of them (the published recipes validate their whole
    sets: TaRO 800 rows, OPDVR/GRPD 1,590 problems)."""
    val_before_train: bool = False
    """Validate once before the first step (verl's `trainer.val_before_train`), logged as step 0."""
    best_metric: str = "val/reward_mean_at_k"
    """Metric whose best validation value is kept as the `best/` model."""
    tensorboard: bool = True
    """Write TensorBoard event files into the run folder."""
    wandb_project: str | None = None
    """Log to this Weights & Biases project (needs the wandb extra); null = off."""
    bf16: bool = False
    """bf16 autocast of the policy's forwards on a CUDA GPU (and FSDP mixed precision)."""
    nproc: Annotated[int, Gt(0)] = 1
    """Processes (ranks) the run expects, one per device; must divide
    data.prompts_per_step."""
    epochs: Annotated[int | None, Gt(0)] = None
    """Passes over the training data; when set, steps = epochs x batches per epoch (the published
    recipes count epochs: OraRL 1, TaRO 3, OPDVR/GRPD 3)."""
    val_temperature: Annotated[float | None, Ge(0)] = None
    """Validation sampling; None = the rollout's value, val_temperature 0 = greedy."""
    val_top_p: Annotated[float | None, Between(0, 1, low_open=True)] = None
    """Validation top-p; null = rollout.top_p."""
    val_controls: tuple[Control, ...] = ()
    """Video controls validation also samples on (video/controls.py: frozen, reversed, shuffled,
    blank): logs val/control/NAME/mean_at_k and val/video_gain/NAME."""
    log_every: Annotated[int, Gt(0)] = 1
    """steps between log lines when stdout is not a terminal"""
    cpu_threads: Annotated[int, Ge(0)] = 0
    """Intra-op torch threads on CPU; 0 = the process's cores / local ranks, unless OMP_NUM_THREADS
    is set (trainer/threads.py)."""
    check_inputs: bool = True
    """Record each rollout row's input fingerprint (prompt token ids, grid_thw, frame timestamps,
    a hash of the pixel tensors) and check it before the old-policy, reference, teacher and loss
    forwards; a mismatch stops the step naming the row (docs/long_videos.md)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_device("trainer.device", self.device)
        if not self.output_dir.strip():
            raise ConfigError("trainer.output_dir is empty; set a folder such as runs/my-run")
        check_controls(self.val_controls, "trainer.val_controls:")
        if self.wandb_project:
            _require_module("wandb", f"trainer.wandb_project={self.wandb_project!r}", "wandb")


# The tools `sft.target: tool_trajectory` has a gold plan for (`rollout/tools/gold.py`:
# `GOLD_PLANS` holds one per name, a test keeps the two equal).
GOLD_TOOLS: tuple[str, ...] = ("get_clip", "crop_video", "select_frames", "seek_video_frames")


@dataclass(frozen=True)
class SFTConfig(Checked, section="sft"):
    """`videorl sft`: supervised warm start. Each trainer step is one optimizer step over
    `data.prompts_per_step` records; the loss is the token-mean next-token NLL of the target
    response only (the prompt is context, never a label).

    target: `annotation` = the record's serialized ground truth (OraRL's annotation row);
    `constructed` = TaRO's constructed reasoning (query + dense captions), then the answer;
    `tool_trajectory` = a synthetic gold tool trajectory (docs/tools.md);
    `answer_twice` = VideoAuto-R1's two boxed answers around a think block.
    """

    target: Literal["annotation", "constructed", "tool_trajectory", "answer_twice"] = "annotation"
    """The SFT target response: annotation (the serialized ground truth), constructed (TaRO's
    reasoning, then the answer) or tool_trajectory (the gold calls of the first tool of
    rollout.tools with a gold plan, rollout/tools/gold.py: get_clip over the whole video,
    crop_video of each half, select_frames of all frames or seek_video_frames with the
    question; the results as context, then the answer; max_response_tokens bounds the whole
    trajectory) or answer_twice (VideoAuto-R1's \\boxed{y}<think></think>\\boxed{y})."""
    max_response_tokens: Annotated[int, Gt(0)] = 256
    """targets longer than this (EOS included) are cut"""
    tool_call_fraction: Annotated[float, Between(0, 1)] = 1.0
    """tool_trajectory: the chance that a record's target calls the tools (drawn per record
    and step); the others get the direct answer after the same prompt with the tool list, so
    the model learns to call in that share of its answers and RL can raise it"""
