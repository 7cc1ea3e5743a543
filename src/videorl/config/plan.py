"""The resolved plan of a training job, printed by `videorl train --dry-run`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from rich.table import Table

from videorl.config.schema import Config
from videorl.config.sequence_plan import sequence_parallel_summary
from videorl.errors import ConfigError


@dataclass(frozen=True)
class StepPlan:
    """What one optimizer step processes, derived from the config alone."""

    world_size: int
    prompts_per_step: int
    prompts_per_rank: int
    policy_rows_per_group: int
    annotation_rows_per_group: int
    rows_per_step: int
    rows_kept_per_step: int
    max_response_tokens: int
    response_tokens_per_step: int
    micro_batch_tokens: int
    mini_batches: int
    epochs: int
    estimator: str
    total_steps: int
    attention: str = "sdpa_varlen"
    packing: str = "auto"
    data_epochs: int | None = None  # trainer.epochs: steps = epochs x batches per epoch
    policy_loss: str = "ppo"  # algorithm.loss.name and its clip range
    loss_aggregation: str = "token-mean"
    length_terms: str = "none"  # reward.overlong / reward.length_band when enabled
    temporal_contrast: str | None = None  # T-GRPO's shuffled rollouts and bonus, when on
    group_by_family: bool = True  # false: a step's prompts come from all families at once
    sampler: str = "videorl"  # data.sampler: orarl batches by problem_type, drops short ones
    dynamic_sampling: str = "off"  # algorithm.dynamic_sampling when enabled
    validation: str = "off"  # set size, samples, frequency, before training
    lr_schedule: str = "constant"  # the schedule and its horizon
    kl: str = "off"  # the KL estimator and coefficient
    sequence_parallel: str | None = None  # tokens and activation memory per rank when S > 1
    tools: str | None = None  # rollout.tools: multi-turn rollouts, and what they bypass
    judge: str | None = None  # reward.judge: the LLM judge of open-ended answers, when set
    processes: str = "one process generates and trains"  # rollout.mode: the process layout


def plan_step(config: Config) -> StepPlan:
    world = config.trainer.nproc
    kept = config.rows_kept_per_group() * config.data.prompts_per_step
    return StepPlan(
        world_size=world,
        prompts_per_step=config.data.prompts_per_step,
        # a sequence-parallel group's ranks share their prompts
        prompts_per_rank=config.data.prompts_per_step
        // max(1, world // config.model.sequence_parallel_size),
        policy_rows_per_group=config.rollout.n,
        annotation_rows_per_group=int(config.algorithm.annotation_rows),
        rows_per_step=config.group_size * config.data.prompts_per_step,
        rows_kept_per_step=kept,
        max_response_tokens=config.rollout.response_budget,
        response_tokens_per_step=kept * config.rollout.response_budget,
        micro_batch_tokens=config.optim.micro_batch_tokens,
        mini_batches=config.optim.mini_batches,
        epochs=config.optim.epochs,
        estimator=config.algorithm.estimator,
        total_steps=config.trainer.steps,
        attention=config.model.attn_implementation,
        packing=str(config.model.packing).lower(),
        data_epochs=config.trainer.epochs,
        policy_loss=_policy_loss_summary(config),
        # never None: PolicyLossConfig.__post_init__ fills in the named loss's default
        loss_aggregation=cast(str, config.algorithm.loss.aggregation),
        length_terms=_length_terms_summary(config),
        temporal_contrast=_temporal_contrast(config),
        group_by_family=config.data.group_by_family,
        sampler=config.data.sampler,
        dynamic_sampling=_dynamic_sampling_summary(config),
        validation=validation_summary(
            config, f"{config.trainer.val_samples} samples{_with_tools(config)}"
        ),
        lr_schedule=_schedule_summary(config),
        kl=_kl_summary(config),
        sequence_parallel=sequence_parallel_summary(config),
        tools=_tools_summary(config),
        judge=_judge_summary(config),
        processes=_process_summary(config),
    )


def _process_summary(config: Config) -> str:
    """The process layout (docs/async.md): trainer ranks, and async rollout workers."""
    ranks = config.trainer.nproc
    trainer = f"{ranks} trainer rank{'s' * (ranks != 1)}"
    rollout = config.rollout
    if rollout.mode == "sync":
        return f"{trainer}, each generating then training (rollout.mode=sync)"
    threads = (
        f"{rollout.worker_threads} threads each"
        if rollout.worker_threads
        else "the cores split evenly with the trainer"
    )
    if rollout.pin_cores and not rollout.devices:
        threads += ", on CPU pinned to cores of their own when they fit"
    devices = f" on {', '.join(rollout.devices)}" if rollout.devices else ""
    return (
        f"{trainer} + {rollout.workers} rollout worker process(es){devices} ({threads}); "
        f"a batch trains {rollout.max_staleness} version(s) after the weights that sampled "
        f"it, weights published every {rollout.sync_every} step(s)"
    )


# Why the forwards of multi-turn rows take the plain padded path (models/logprobs.py).
MULTITURN_BYPASS = (
    "padding-free packing and shared-prompt forwards are bypassed for these rows: their "
    "tool turns put images and clips inside the response, and those paths lay media out per "
    "prompt; the visual-embedding cache encodes each turn's new media once"
)


def _tools_summary(config: Config) -> str | None:
    """The tools of a multi-turn rollout, its limits and the forward paths it bypasses."""
    rollout = config.rollout
    if not rollout.tools:
        return None
    return (
        f"{', '.join(rollout.tools)}; <= {rollout.max_turns} model turns of <= "
        f"{rollout.max_new_tokens} tokens, {rollout.max_total_tokens} tokens per row after "
        f"the prompt (tool turns masked out of the loss){_subagents_summary(config)}; "
        f"{MULTITURN_BYPASS}"
    )


def _subagents_summary(config: Config) -> str:
    """The run's sub-agents (docs/tools.md#sub-agents) and whether their tokens train."""
    rollout = config.rollout
    if not rollout.subagents:
        return ""
    budget = rollout.subagent_max_new_tokens or rollout.max_new_tokens
    trained = (
        "trained with the calling turn's advantage, prompts masked"
        if rollout.include_subagent_in_loss
        else "not trained"
    )
    return (
        f"; {', '.join(rollout.subagents)} answered by sub-agents of the policy (<= {budget} "
        f"tokens, {trained})"
    )


def _judge_summary(config: Config) -> str | None:
    """The LLM judge of open-ended answers (`rewards/judge.py`) when `reward.judge.url` is set."""
    judge = config.reward.judge
    if not judge.enabled:
        return None
    model = judge.model or "the first model it lists"
    return (
        f"{model} at {judge.url}, {judge.style} prompt, temperature {judge.temperature:g}, "
        f"{judge.timeout_s:g} s x "
        f"{judge.max_retries + 1} tries; open-ended answers in the LongVT plug-in, a failure "
        "scores 0"
    )


def _with_tools(config: Config) -> str:
    """How validation answers when the run has tools (the multi-turn loop), else ''."""
    rollout = config.rollout
    if not rollout.tools:
        return ""
    return f" with {', '.join(rollout.tools)} (<= {rollout.max_turns} model turns)"


def validation_summary(config: Config, samples: str | None = None) -> str:
    """How much of the validation set is scored, how (`samples`, default `k samples`), and
    when; or `off`, with the set it would score (`off (all prompts x 1 samples when on)`)."""
    trainer = config.trainer
    size = "all" if trainer.val_max_prompts is None else f"first {trainer.val_max_prompts}"
    samples = samples or f"{trainer.val_samples} samples"
    if not config.data.val:
        return "off (no data.val)"
    if not (trainer.val_every or trainer.val_before_train):
        return f"off ({size} prompts x {samples} when on)"
    every = f"every {trainer.val_every} steps" if trainer.val_every else "no periodic"
    before = ", and before training" if trainer.val_before_train else ""
    return f"{size} prompts x {samples}, {every}{before}"


def _schedule_summary(config: Config) -> str:
    optim = config.optim
    if optim.schedule == "constant":
        return f"constant after {optim.warmup_steps} warm-up steps (no decay horizon)"
    horizon = optim.schedule_steps or config.trainer.steps
    return f"cosine to {optim.min_lr_ratio:g} lr at step {horizon} (warm-up {optim.warmup_steps})"


def _kl_summary(config: Config) -> str:
    loss = config.algorithm.loss
    return f"{loss.kl_type} x {loss.kl_coef:g}" if loss.kl_coef > 0 else "off (kl_coef 0)"


def _temporal_contrast(config: Config) -> str | None:
    tc = config.algorithm.temporal_contrast
    if not tc.enabled:
        return None
    return (
        f"T-GRPO: {tc.shuffled_rollouts(config.rollout.n)} shuffled-frame rollouts per video "
        f"prompt (no gradient); +{tc.bonus:g} to correct rows (task > {tc.correct_threshold:g}) "
        f"when p >= {tc.margin:g} * p~"
    )


def _policy_loss_summary(config: Config) -> str:
    loss = config.algorithm.loss
    return f"{loss.name} (clip {loss.clip_low:g} / {loss.clip_high:g})"


def _dynamic_sampling_summary(config: Config) -> str:
    """DAPO's group filter and refill (trainer/dynamic_sampling.py): the metric whose
    zero-variance groups are dropped, prompts per draw, groups kept, the cap; or `off`."""
    ds = config.algorithm.dynamic_sampling
    if not ds.enabled:
        return "off"
    draw = ds.batches_per_draw * config.data.prompts_per_step
    cap = ds.max_draws or "none"
    return f"{ds.metric}: {draw}->{config.data.prompts_per_step}, cap {cap} ({ds.on_cap})"


def _length_terms_summary(config: Config) -> str:
    """The length reward terms a step adds (rewards/length.py), or `none`."""
    terms = []
    overlong, band = config.reward.overlong, config.reward.length_band
    if overlong.enabled:
        budget = config.rollout.response_budget
        start = budget - overlong.buffer_len
        terms.append(f"overlong {start}..{budget} to -{overlong.penalty_factor:g}")
    if band.enabled:
        terms.append(
            f"+{band.bonus:g} at {band.min}..{band.max} if task > {band.correct_threshold:g}"
        )
    return "; ".join(terms) or "none"


def plan_table(plan: StepPlan) -> Table:
    table = Table(title="Step plan", show_header=True)
    table.add_column("quantity")
    table.add_column("value", justify="right")
    rows = [
        ("estimator", plan.estimator),
        ("policy loss", plan.policy_loss),
        ("loss aggregation", plan.loss_aggregation),
        ("length reward terms (tokens)", plan.length_terms),
        ("dynamic sampling (metric: drawn->kept)", plan.dynamic_sampling),
        ("world size (ranks)", plan.world_size),
        ("processes", plan.processes),
        ("prompts per step", plan.prompts_per_step),
        ("prompts per rank", plan.prompts_per_rank),
        (
            "rows per group (policy + annotation)",
            f"{plan.policy_rows_per_group} + {plan.annotation_rows_per_group}",
        ),
        ("rows per step", plan.rows_per_step),
        ("rows kept after pruning", plan.rows_kept_per_step),
        ("max response tokens per row", plan.max_response_tokens),
        ("max response tokens per step (kept rows)", plan.response_tokens_per_step),
        ("micro-batch token budget", plan.micro_batch_tokens),
        ("attention / padding-free packing", f"{plan.attention} / {plan.packing}"),
        ("mini-batches x epochs", f"{plan.mini_batches} x {plan.epochs}"),
        ("learning-rate schedule", plan.lr_schedule),
        ("KL to the reference", plan.kl),
        ("validation", plan.validation),
        (
            "total steps",
            plan.total_steps
            if plan.data_epochs is None
            else f"{plan.data_epochs} epoch{'s' * (plan.data_epochs != 1)} x batches per epoch",
        ),
    ]
    if plan.temporal_contrast:
        rows.insert(1, ("temporal contrast", plan.temporal_contrast))
    if plan.tools:
        rows.insert(1, ("tools (multi-turn rollouts)", plan.tools))
    if plan.judge:
        at = [name for name, _ in rows].index("length reward terms (tokens)")
        rows.insert(at, ("LLM judge (accuracy)", plan.judge))
    if plan.sequence_parallel:
        at = [name for name, _ in rows].index("world size (ranks)") + 1
        rows.insert(at, ("sequence parallelism (tokens, memory)", plan.sequence_parallel))
    if not plan.group_by_family:
        rows.insert(4, ("prompt mix", "all families pooled: images and videos share a step"))
    elif plan.sampler == "orarl":
        rows.insert(4, ("prompt mix", "OraRL's: one problem_type per step, short batches dropped"))
    for name, value in rows:
        table.add_row(name, str(value))
    return table


@dataclass(frozen=True)
class ModelSource:
    """Where one configured model resolves: a local folder or a Hub id's cached snapshot."""

    key: str
    value: str
    folder: str | None = None
    model_type: str | None = None
    error: str | None = None


def model_sources(config: Config) -> list[ModelSource]:
    """Resolve model.path, model.reference_path and model.teacher_path without loading
    weights (a Hub id is looked up in the HF cache, or online unless HF_HUB_OFFLINE=1)."""
    from videorl.models.loading import model_folder, read_model_type

    model = config.model
    entries = [("model.path", model.path, model.revision)]
    entries += [
        (key, value, None)
        for key, value in (
            ("model.reference_path", model.reference_path),
            ("model.teacher_path", model.teacher_path),
        )
        if value
    ]
    sources = []
    for key, value, revision in entries:
        try:
            folder = model_folder(value, revision)
            kind = read_model_type(value, revision)
        except ConfigError as err:
            sources.append(ModelSource(key, value, error=str(err)))
            continue
        sources.append(ModelSource(key, value, str(folder), kind))
    return sources


def sources_table(sources: list[ModelSource]) -> Table:
    table = Table(title="Models", show_header=True)
    for column in ("key", "value", "resolves to"):
        table.add_column(column, overflow="fold")
    for source in sources:
        where = (
            f"{source.folder} ({source.model_type})"
            if source.error is None
            else "[yellow]not found (see the warning below)[/]"
        )
        table.add_row(source.key, source.value, where)
    return table


def sft_plan_table(config: Config) -> Table:
    """What `videorl sft` does per step, derived from the config alone."""
    world = config.trainer.nproc
    table = Table(title="SFT step plan", show_header=True)
    table.add_column("quantity")
    table.add_column("value", justify="right")
    tools = _with_tools(config) if config.sft.target == "tool_trajectory" else ""
    val = validation_summary(config, samples=f"1 greedy answer{tools}")
    rows = [
        ("target", f"{config.sft.target} (loss on response tokens only)"),
        ("world size (ranks)", world),
        ("records per step", config.data.prompts_per_step),
        ("records per rank", config.data.prompts_per_step // world),
        ("max target tokens per record (EOS included)", config.sft.max_response_tokens),
        (
            "max target tokens per step",
            config.data.prompts_per_step * config.sft.max_response_tokens,
        ),
        ("micro-batch token budget", config.optim.micro_batch_tokens),
        (
            "attention / padding-free packing",
            f"{config.model.attn_implementation} / {str(config.model.packing).lower()}",
        ),
        (
            "optimizer steps",
            f"{config.trainer.steps} (lr {config.optim.lr:g}, {config.optim.schedule})",
        ),
        ("validation", val),
    ]
    for name, value in rows:
        table.add_row(name, str(value))
    return table


def run_warnings(config: Config) -> list[str]:
    """What `--dry-run` warns of before a run: a data file that is not there (with the
    command that makes it), a warm-up that outlasts the run (it never reaches optim.lr) and
    a validation interval past the last step (no validation runs)."""
    from pathlib import Path

    from videorl.hub import looks_local
    from videorl.quickstart import next_command

    warnings = []
    for key in ("train", "val"):
        path = getattr(config.data, key)
        if path and (looks_local(path) or Path(path).suffix) and not Path(path).exists():
            fix = next_command(path) or "; fix the path"
            warnings.append(f"data.{key} {path} does not exist{fix}")
    steps, optim, trainer = config.trainer.steps, config.optim, config.trainer
    if optim.warmup_steps >= steps:
        warnings.append(
            f"optim.warmup_steps={optim.warmup_steps} >= trainer.steps={steps}: the warm-up "
            "never ends, so the run never reaches optim.lr; lower optim.warmup_steps"
        )
    if trainer.val_every > steps and config.data.val:
        warnings.append(
            f"trainer.val_every={trainer.val_every} > trainer.steps={steps}: no validation "
            f"runs; set trainer.val_every <= {steps} (0: none)"
        )
    return warnings
