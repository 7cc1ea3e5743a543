"""The Python API: what a script does with videorl, as the `videorl` commands do it.

Each command of the command line calls the function here of the same job (`videorl train`
calls `train`, `videorl eval` calls `evaluate`, ...), so a script and the command line
run the same code. Nothing heavy is imported until a function is called.

    from videorl import api

    model = api.make_tiny("runs/demo/model").path
    api.synth("runs/demo/data", ["temporal_grounding"], n=8, val=2)
    data = ["data.train=runs/demo/data/train.jsonl", "data.val=runs/demo/data/val.jsonl"]
    cfg = api.load_config(
        "sft_quickstart", [f"model.path={model}", *data, "trainer.output_dir=runs/demo/sft"]
    )
    final = api.sft(cfg)  # runs/demo/sft/final
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from videorl.errors import ConfigError

if TYPE_CHECKING:
    from videorl.algorithms.advantages import register_advantage as register_advantage_estimator
    from videorl.algorithms.policy_losses import register_policy_loss
    from videorl.config import Config
    from videorl.data.families import register_family as register_task_family
    from videorl.eval.runner import EvalOutputs
    from videorl.models.tiny import BuiltModel
    from videorl.rewards.config import PluginMode
    from videorl.rollout.tools.registry import register_tool

__all__ = [
    "CONFIG_DIR",
    "evaluate",
    "load_config",
    "make_tiny",
    "packaged_recipes",
    "register_advantage_estimator",
    "register_policy_loss",
    "register_task_family",
    "register_tool",
    "resolve_config_path",
    "serve",
    "sft",
    "synth",
    "train",
    "with_reward_plugin",
]

CONFIG_DIR = Path(__file__).resolve().parent / "recipes"  # configs/ in the repo links here
"""The recipes shipped in the package (`videorl recipes` lists them)."""

DTYPES = ("float32", "bfloat16", "float16")


def resolve_config_path(name: str | Path) -> Path:
    """A YAML path, or the name of a packaged recipe (`quickstart` ->
    videorl/recipes/quickstart.yaml); an unknown name is returned as the path it names."""
    path = Path(name)
    if path.is_file():
        return path
    for candidate in (CONFIG_DIR / name, CONFIG_DIR / f"{name}.yaml"):
        if candidate.is_file():
            return candidate
    return path


def packaged_recipes() -> dict[str, Path]:
    """Recipe name -> YAML file shipped in the package (videorl/recipes/*.yaml)."""
    return {path.stem: path for path in sorted(CONFIG_DIR.glob("*.yaml"))}


def load_config(config: str | Path | None, overrides: Sequence[str] = ()) -> Config:
    """The checked config of a recipe (a YAML path or a packaged recipe's name; None: the
    defaults) with dotted `overrides` such as `"trainer.steps=3"` applied; an unknown key
    or a bad value is a `ConfigError` naming it, raised before torch is imported."""
    from videorl.config.keys import check_recipe_keys

    path = None if config is None else resolve_config_path(config)
    check_recipe_keys(path, list(overrides))  # a typo, before torch loads
    from videorl.config import load_config as load

    return load(path, list(overrides))


def train(config: Config, *, resume: str | None = None, overwrite: bool = False) -> Path:
    """Train the policy of `config` with its algorithm (GRPO, OraRL, TaRO, OPDVR, ...) for
    `trainer.steps` steps in this process; returns the last model folder written (`final/`
    unless the run was interrupted). `resume`: "auto" (the latest checkpoint of
    `trainer.output_dir`) or a checkpoint path; `overwrite` replaces an earlier run's files."""
    from videorl.trainer.loop import run_training

    return run_training(config, resume=resume, overwrite=overwrite)


def sft(config: Config, *, resume: str | None = None, overwrite: bool = False) -> Path:
    """Supervised fine-tuning of `config`'s model on its targets (response-only next-token
    loss); returns the last model folder written (`final/`, a model that `train` takes as
    `model.path`). `resume` and `overwrite` as in `train`."""
    from videorl.trainer.sft import run_sft

    return run_sft(config, resume=resume, overwrite=overwrite)


def make_tiny(
    out: str | Path,
    arch: str = "qwen2_5_vl",
    *,
    size: str = "tiny",
    seed: int = 0,
    device: str = "cpu",
    dtype: str = "float32",
    layers: int | None = None,
    vision_depth: int | None = None,
    small_vocab: bool = False,
    vision_warmup: int = 0,
    vision_warmup_clips: str = "shape",
    overwrite: bool = False,
) -> BuiltModel:
    """Build a random-init model offline and save it under `out` like a real checkpoint
    (`videorl make-tiny`; its options are these parameters): `arch` qwen2_5_vl | qwen3_vl |
    qwen3_5 | qwen3, `size` tiny | bench | a published size, `vision_warmup` steps of a
    self-supervised warm-up of the vision tower on synthetic clips of `vision_warmup_clips`
    (shape | broad)."""
    import torch

    from videorl.data.synth_clips import CLIP_KINDS
    from videorl.models.tiny import build_model
    from videorl.models.vision_warmup import WarmupSettings
    from videorl.outputs import refuse_nonempty

    refuse_nonempty(Path(out), overwrite=overwrite, option="OUT")
    if dtype not in DTYPES:
        raise ConfigError(f"--dtype {dtype!r} is unknown; choose float32, bfloat16 or float16")
    if vision_warmup_clips not in CLIP_KINDS:
        raise ConfigError(
            f"--vision-warmup-clips {vision_warmup_clips!r} is unknown; choose "
            f"{' or '.join(CLIP_KINDS)}"
        )
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"--device {device}: no CUDA GPU here; use --device cpu")
    return build_model(
        arch,
        out,
        size=size,
        seed=seed,
        device=device,
        dtype=getattr(torch, dtype),
        layers=layers,
        vision_depth=vision_depth,
        small_vocab=small_vocab,
        vision_warmup=(
            WarmupSettings(steps=vision_warmup, seed=seed, kind=vision_warmup_clips)
            if vision_warmup
            else None
        ),
    )


def synth(
    out: str | Path,
    families: Sequence[str] = ("all",),
    *,
    n: int = 16,
    val: int = 0,
    seed: int = 0,
    tg_events: Sequence[str] = ("appear", "colour", "move"),
    tg_grid: float = 0.5,
    overwrite: bool = False,
) -> dict[str, Any]:
    """Write synthetic MP4 videos and exact-ground-truth records (`n` training and `val`
    validation records per family; `families`: names, aliases or "all") under `out`;
    returns the manifest. With `val`, the manifest also records each family's blind best on
    the validation set (the best fixed answer given only the prompt, `blind_best`)."""
    from videorl.data.synth import write_dataset

    manifest = write_dataset(
        out,
        list(families),
        n=n,
        val=val,
        seed=seed,
        overwrite=overwrite,
        tg_events=tuple(tg_events),
        tg_grid=tg_grid,
    )
    if val:
        manifest["blind_best"] = _record_blind_best(Path(out))
    return manifest


def _record_blind_best(out: Path) -> dict[str, dict]:
    """Fit the blind baselines on train.jsonl, score val.jsonl, add them to the manifest."""
    import json

    from videorl.data.loaders import load_records
    from videorl.data.synth import MANIFEST
    from videorl.eval.blind import blind_best

    train_records = load_records(out / "train.jsonl").records
    found = blind_best(train_records, load_records(out / "val.jsonl").records)
    manifest = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    manifest["blind_best"] = found
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return found


def evaluate(
    model: str | None = None,
    benchmark: str | None = None,
    video_root: str | None = None,
    benchmark_root: str | None = None,
    out: Path | None = None,
    max_samples: int | None = None,
    controls: str | None = None,
    predictions: Path | None = None,
    compare: tuple[Path, Path] | None = None,
    endpoint: str | None = None,
    served_model: str | None = None,
    checkpoint: str | None = None,
    model_type: str | None = None,
    concurrency: int = 8,
    api_key: str | None = None,
    think: bool | None = None,
    prompt_style: str | None = None,
    tools: str | None = None,
    tool_modules: str | None = None,
    max_turns: int = 3,
    max_total_tokens: int = 2048,
    batch_size: int = 8,
    max_new_tokens: int = 256,
    early_exit_confidence: float | None = None,
    fps: float | None = None,
    max_frames: int | None = None,
    min_pixels: int | None = None,
    max_pixels: int | None = None,
    device: str = "auto",
    skip_invalid: bool = False,
    overwrite: bool = False,
    resume: bool = False,
) -> EvalOutputs | None:
    """Evaluate a checkpoint (`model`), an OpenAI-compatible endpoint (`endpoint` with
    `served_model`) or a predictions file (`predictions`) on `benchmark`, or compare two
    evals (`compare=(a, b)`, which returns None). The parameters are `videorl eval`'s
    options, with its defaults (`videorl eval -h` explains each). Returns the outputs:
    `metrics` (what metrics.json holds) and `out_dir`."""
    from videorl.errors import spelled_fixes
    from videorl.eval import commands as job
    from videorl.hub import refuse_missing_local

    with spelled_fixes(job.EVAL_FIXES):  # its messages name eval's flags, not training keys
        mode = job.one_mode(
            model=model, endpoint=endpoint, predictions=predictions, compare=compare
        )
        if compare and benchmark is None:  # two finished evals: read, no model or video stack
            job.compare(compare, None, out, overwrite)
            return None
        for key, path in (("--model", model), ("--checkpoint", checkpoint)):
            if path is not None:
                refuse_missing_local(path, key)  # a typo is not sent to the Hub
        job.check_early_exit(early_exit_confidence, model=model, tools=tools)  # before any load
        runner = job.eval_tools(tools, mode, max_turns, max_total_tokens, modules=tool_modules)
        model_type = job.endpoint_model_type(endpoint, served_model, checkpoint, model_type)
        video = {"fps": fps, "max_frames": max_frames, "min_pixels": min_pixels}
        run = job.eval_run_settings(
            model or checkpoint,
            think=think,
            prompt_style=prompt_style,
            **video,
            max_pixels=max_pixels,
        )
        batch = max(batch_size, concurrency) if endpoint else batch_size
        settings = job.eval_settings(
            benchmark, out, video_root, benchmark_root, max_samples, batch, run.video
        )
        settings = job.with_controls(settings, controls, skip_invalid)
        if compare:
            job.compare(compare, settings, out, overwrite)
            return None
        if settings is None:
            raise ConfigError(f"videorl eval {mode} needs --benchmark NAME|FILE")
        job.claim_eval_out(settings, model, overwrite=overwrite, resume=resume, keep=predictions)
        if predictions is not None:
            return job.evaluate_predictions(settings, predictions)
        backend = job.eval_backend(
            model,
            run,
            max_new_tokens,
            device,
            endpoint=endpoint,
            served_model=served_model,
            model_type=model_type,
            concurrency=concurrency,
            api_key=api_key,
            tools=runner,
            early_exit=early_exit_confidence,
        )
        source = job.model_source(backend, run, max_new_tokens, model is not None)
        modules = tool_modules if runner is not None else None
        return job.evaluate_backend(settings, backend, source, early_exit_confidence, modules)


def serve(
    model: str,
    host: str = "127.0.0.1",
    port: int = 8000,
    served_model: str | None = None,
    api_key: str | None = None,
    media_root: Path | None = None,
    max_new_tokens: int = 1024,
    max_n: int = 8,
    max_body_mb: float = 64.0,
    max_request_frames: int = 256,
    max_frame_pixels: int = 4096 * 4096,
    max_request_pixels: int = 256 * 1280 * 720,
    max_batch: int = 8,
    max_queue: int = 64,
    body_timeout: float = 30.0,
    fps: float | None = None,
    max_frames: int | None = None,
    min_pixels: int | None = None,
    max_pixels: int | None = None,
    device: str = "auto",
    early_exit_confidence: float | None = None,
) -> None:
    """Serve the checkpoint `model` as an OpenAI/vLLM-compatible chat-completions endpoint
    (HF engine) until interrupted, with the run's settings (its `config.yaml`: video
    sampling, think mode, template variables; the video parameters override). The
    parameters are `videorl serve`'s options, with its defaults (`videorl serve -h`)."""
    from videorl.eval.commands import check_early_exit
    from videorl.serve import commands as job

    job.check_serve_installed()
    check_early_exit(early_exit_confidence, model=model)
    from videorl.serve.listen import bind

    bind(host, port).close()  # a busy port is a one-line error before the model loads
    from rich.console import Console

    from videorl.config.run import run_model_name
    from videorl.inference import RunSettings, load_for_inference
    from videorl.serve.app import serve as listen
    from videorl.serve.chat import ChatService

    if media_root is not None and not media_root.is_dir():
        raise ConfigError(f"--media-root {media_root} is not a folder; pass an existing folder")
    run = RunSettings.from_checkpoint(model).override(
        fps=fps, max_frames=max_frames, min_pixels=min_pixels, max_pixels=max_pixels
    )
    limits = job.serve_limits(
        max_body_mb,
        body_timeout,
        max_new_tokens,
        max_n,
        max_request_frames,
        max_frame_pixels,
        max_request_pixels,
        max_batch,
        max_queue,
    )
    console = Console()
    if run.source is not None:
        console.print(f"serve settings: {run.summary()}", highlight=False, soft_wrap=True)
    service = ChatService.for_run(
        load_for_inference(model, device),
        served_model or run_model_name(model),
        run,
        limits,
        media_root,
    )
    listen(
        service,
        host=host,
        port=port,
        api_key=api_key,
        announce=lambda line: console.print(line, highlight=False, soft_wrap=True),
        early_exit=early_exit_confidence,
    )


def with_reward_plugin(
    config: Config,
    family: str,
    plugin: str | Callable[..., Any],
    *,
    mode: PluginMode = "replace",
    weight: float = 0.5,
) -> Config:
    """`config` with the reward plug-in `plugin` for `family` (`reward.plugins`): a
    `"module:function"` string or an importable module-level function, called as
    `plugin(record, response, config)` and returning at least `format`, `task` and
    `overall`; `mode` replace (its reward) or extend (blended with the built-in by
    `weight`)."""
    spec = plugin if isinstance(plugin, str) else f"{plugin.__module__}:{plugin.__qualname__}"
    reward = dataclasses.replace(
        config.reward,
        plugins={**config.reward.plugins, family: spec},
        plugin_mode=mode,
        plugin_weight=weight,
    )
    return dataclasses.replace(config, reward=reward)


# The registries' decorators, imported on first use: `api.register_tool` is
# `videorl.rollout.tools.registry.register_tool`, and so on (docs/api.md shows each).
REGISTRIES = {
    "register_tool": ("videorl.rollout.tools.registry", "register_tool"),
    "register_advantage_estimator": ("videorl.algorithms.advantages", "register_advantage"),
    "register_policy_loss": ("videorl.algorithms.policy_losses", "register_policy_loss"),
    "register_task_family": ("videorl.data.families", "register_family"),
}


def __getattr__(name: str) -> Any:
    """`register_tool`, `register_advantage_estimator`, `register_policy_loss` and
    `register_task_family`: the registries' own functions (`REGISTRIES`)."""
    if name not in REGISTRIES:
        raise AttributeError(f"module 'videorl.api' has no attribute {name!r}")
    import importlib

    module, attribute = REGISTRIES[name]
    return getattr(importlib.import_module(module), attribute)
