"""The `videorl eval` command (registered in `videorl.cli`).

Only typer is imported here; models, torch and matplotlib load inside the commands, so
`videorl --help` stays fast.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, cast

from videorl.config.loader import to_dict
from videorl.errors import ConfigError, spelled_fixes
from videorl.eval.options import (
    BatchSize,
    Benchmark,
    BenchmarkRoot,
    Compare,
    Concurrency,
    Controls,
    Device,
    EarlyExitConfidence,
    Endpoint,
    EndpointCheckpoint,
    EndpointKey,
    EndpointModelType,
    EvalModel,
    EvalServedModel,
    EvalToolModules,
    EvalTools,
    Fps,
    MaxFrames,
    MaxPixels,
    MaxSamples,
    MaxTotalTokens,
    MaxTurns,
    MinPixels,
    Out,
    OverwriteEval,
    Predictions,
    PromptStyle,
    ResponseBudget,
    ResumeEval,
    SkipInvalid,
    Think,
    VideoRoot,
    check_early_exit,
)
from videorl.hub import refuse_missing_local

_DEFAULT_OUT = Path("runs/eval")


def _print_summary(metrics: dict, out_dir: Path) -> None:
    from rich.console import Console
    from rich.table import Table

    from videorl.eval.controls import gain_rows
    from videorl.eval.tools import tool_rows

    console = Console()
    for family, summary in metrics["families"].items():
        table = Table(title=f"{family} (n={summary['n']}, %)")
        for name in summary["metrics"]:
            table.add_column(name, justify="right")
        table.add_row(*(f"{v:.1f}" for v in summary["metrics"].values()))
        console.print(table)
    rows = gain_rows(metrics)
    if rows:
        table = Table(title="video controls (%): gain = real - control")
        for name in ("control", "family", "metric", "real", "on control", "gain"):
            table.add_column(name, justify="left" if name in ("family", "metric") else "right")
        for control, family, metric, real, value, gain in rows:
            table.add_row(control, family, metric, f"{real:.1f}", f"{value:.1f}", f"{gain:+.1f}")
        console.print(table)
    tools = metrics.get("tools")
    if tools:
        use = tools["use"]
        calls = (
            f"calls/answer {use['calls_per_answer']:.2f}, errors/answer "
            f"{use['errors_per_answer']:.2f}, turns {use['turns_mean']:.2f} (max {use['turns_max']})"
            if use.get("answers")
            else "no answers"
        )
        table = Table(title=f"tools {', '.join(tools['tools'])} (%): {calls}")
        for name in ("family", "metric", "with tools", "without tools", "gain"):
            table.add_column(name, justify="left" if name in ("family", "metric") else "right")
        for family, metric, on, off, gain in tool_rows(metrics):
            table.add_row(family, metric, f"{on:.1f}", f"{off:.1f}", f"{gain:+.1f}")
        console.print(table)
    counts = ", ".join(f"{k} {v}" for k, v in metrics["counts"].items() if v)
    console.print(f"records: {counts}")
    console.print(
        f"wrote {out_dir}/predictions.jsonl, metrics.json, report.md, samples.jsonl, plots/"
    )


VIDEO_FLAGS = ("fps", "max_frames", "min_pixels", "max_pixels")  # eval's --fps ... flags
# The fixes that data and video messages give in training keys (`errors.fix`), as eval takes
# them: every fix eval prints is one it accepts.
EVAL_FIXES = {
    "set data.video_root": "pass --video-root",
    "set data.skip_invalid=true": "pass --skip-invalid",
    "set data.split / data.val_split": "name the split in --benchmark (org/name@SPLIT)",
    "check data.train / data.val": "check --benchmark",
    "set data.family=NAME or data.columns.problem_type=COLUMN": (
        "give each row a problem_type field"
    ),
    "set data.family or data.columns.problem_type": "set each row's problem_type field",
    "set data.columns.videos": "give each row a video (or image) field",
    "set data.format to one of": "write the rows in one of the formats",
    " (or data.columns.prompt=COLUMN ...)": " (docs/data.md)",
    "raise video.cache_bytes": "lower --max-frames or --max-pixels",
    **{f"video.{key}": f"--{key.replace('_', '-')}" for key in VIDEO_FLAGS},
}


def eval_command(
    model: EvalModel = None,
    benchmark: Benchmark = None,
    video_root: VideoRoot = None,
    benchmark_root: BenchmarkRoot = None,
    out: Out = None,
    max_samples: MaxSamples = None,
    controls: Controls = None,
    predictions: Predictions = None,
    compare: Compare = None,
    endpoint: Endpoint = None,
    served_model: EvalServedModel = None,
    checkpoint: EndpointCheckpoint = None,
    model_type: EndpointModelType = None,
    concurrency: Concurrency = 8,
    api_key: EndpointKey = None,
    think: Think = None,
    prompt_style: PromptStyle = None,
    tools: EvalTools = None,
    tool_modules: EvalToolModules = None,
    max_turns: MaxTurns = 3,
    max_total_tokens: MaxTotalTokens = 2048,
    batch_size: BatchSize = 8,
    max_new_tokens: ResponseBudget = 256,
    early_exit_confidence: EarlyExitConfidence = None,
    fps: Fps = None,
    max_frames: MaxFrames = None,
    min_pixels: MinPixels = None,
    max_pixels: MaxPixels = None,
    device: Device = "auto",
    skip_invalid: SkipInvalid = False,
    overwrite: OverwriteEval = False,
    resume: ResumeEval = False,
) -> None:
    """Evaluate a checkpoint, an endpoint or a predictions file on a benchmark, or compare runs.

    A checkpoint written by `videorl train` (--model, or --checkpoint for the one behind
    --endpoint) is evaluated with its run's settings (`config.yaml` of the run: video
    sampling, think mode, prompt style, template variables, coordinates), so eval prompts
    it as training did; flags override. With --tools, the model answers with tools in the
    trainer's multi-turn loop and again without them (docs/tools.md).
    """
    with spelled_fixes(EVAL_FIXES):  # its messages name eval's flags, not training keys
        mode = _one_mode(model=model, endpoint=endpoint, predictions=predictions, compare=compare)
        if compare and benchmark is None:  # two finished evals: read, no model or video stack
            _compare(compare, None, out, overwrite)
            return
        for key, path in (("--model", model), ("--checkpoint", checkpoint)):
            if path is not None:
                refuse_missing_local(path, key)  # a typo is not sent to the Hub
        from videorl.eval.runner import evaluate
        from videorl.video.controls import parse_controls

        # checked before any load
        check_early_exit(early_exit_confidence, model=model, tools=tools)
        runner = eval_tools(tools, mode, max_turns, max_total_tokens, modules=tool_modules)
        model_type = endpoint_model_type(endpoint, served_model, checkpoint, model_type)
        run = eval_run_settings(
            model or checkpoint,
            think=think,
            prompt_style=prompt_style,
            fps=fps,
            max_frames=max_frames,
            min_pixels=min_pixels,
            max_pixels=max_pixels,
        )
        batch = max(batch_size, concurrency) if endpoint else batch_size
        settings = _eval_settings(
            benchmark, out, video_root, benchmark_root, max_samples, batch, run.video
        )
        if settings is not None:
            settings = dataclasses.replace(
                settings, controls=parse_controls(controls), skip_invalid=skip_invalid
            )
        if compare:
            _compare(compare, settings, out, overwrite)
            return
        if settings is None:
            raise ConfigError(f"videorl eval {mode} needs --benchmark NAME|FILE")
        _claim_eval_out(settings, model, overwrite=overwrite, resume=resume, keep=predictions)
        if predictions is not None:
            source: dict = {"predictions": str(predictions)}
            outputs = evaluate(settings, predictions=predictions, source=source)
        else:
            backend = eval_backend(
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
            source = _model_source(backend, run, max_new_tokens, model is not None)
            if early_exit_confidence is not None:
                source["early_exit_confidence"] = early_exit_confidence
            if runner is not None and tool_modules:
                source["tool_modules"] = _comma_list(tool_modules)
            outputs = evaluate(settings, backend=backend, source=source)
        _print_summary(outputs.metrics, outputs.out_dir)


def eval_tools(
    names: str | None, mode: str, max_turns: int, max_total_tokens: int, modules: str | None = None
) -> Any:
    """`(ToolRunner, MultiTurnLimits)` of `--tools` (None without it), after importing
    `--tool-modules`; an unknown tool, a module that does not import, a mode other than
    --model or a bad limit is a one-line `ConfigError`."""
    if not names:
        if modules:
            raise ConfigError("--tool-modules imports the modules of --tools' tools; add --tools")
        return None
    if mode != "--model":
        raise ConfigError(
            f"--tools needs --model (the HF engine runs the tool loop), not {mode}; "
            "endpoints and predictions files have no multi-turn path"
        )
    from videorl.rollout.multiturn import MultiTurnLimits
    from videorl.rollout.tools import ToolRunner, resolve_tools

    if max_turns < 1 or max_total_tokens < 1:
        raise ConfigError(
            f"--max-turns={max_turns} and --max-total-tokens={max_total_tokens} must be >= 1"
        )
    specs = resolve_tools(
        _comma_list(names), _comma_list(modules), key="--tools", modules_key="--tool-modules"
    )
    return ToolRunner(specs), MultiTurnLimits(max_turns, max_total_tokens)


def _comma_list(value: str | None) -> list[str]:
    return [part.strip() for part in (value or "").split(",") if part.strip()]


def eval_run_settings(
    checkpoint: str | None, *, think: bool | None, prompt_style: str | None, **video: Any
) -> Any:
    """The settings an eval prompts and samples with: those of the run that wrote
    `checkpoint` (`RunSettings.from_checkpoint`; the defaults without one), the flags given
    (not None) overriding them."""
    from rich.console import Console

    from videorl.data.prompts import check_prompt_style
    from videorl.inference import RunSettings

    if prompt_style is not None:
        check_prompt_style(prompt_style, "--prompt-style")
    run = RunSettings.from_checkpoint(checkpoint) if checkpoint else RunSettings()
    settings = run.override(think=think, prompt_style=prompt_style, **video)
    if run.source is not None:
        Console(stderr=True).print(
            f"eval settings: {settings.summary()} (override with --think, --prompt-style, "
            "--fps, --max-frames, --min-pixels, --max-pixels)",
            highlight=False,
            soft_wrap=True,
        )
    return settings


def _claim_eval_out(
    settings: Any, model: str | None, *, overwrite: bool, resume: bool, keep: Path | None
) -> None:
    """Claim the eval's output folder (refusing to overwrite another eval's outputs)."""
    from videorl.eval.out_dir import claim_out_dir

    bench_file = settings.benchmark if Path(settings.benchmark).exists() else None
    claim_out_dir(
        settings.out_dir,
        overwrite=overwrite,
        resume=resume,
        inputs=_inputs(model, bench_file, labels=("--model", "--benchmark")),
        keep=keep,
    )


def _eval_settings(
    benchmark: str | None,
    out: Path | None,
    video_root: str | None,
    benchmark_root: str | None,
    max_samples: int | None,
    batch_size: int,
    video: Any,
) -> Any:
    """What to evaluate (None without --benchmark); out defaults to runs/eval/<benchmark>."""
    from videorl.eval.runner import EvalSettings

    if benchmark is None:
        return None
    return EvalSettings(
        benchmark=benchmark,
        out_dir=out or _DEFAULT_OUT / Path(benchmark).stem,
        video_root=video_root,
        benchmark_root=benchmark_root,
        max_samples=max_samples,
        batch_size=batch_size,
        video=video,
    )


def _one_mode(**given: Any) -> str:
    """The one flag of --model, --endpoint, --predictions and --compare that is given."""
    modes = [f"--{name}" for name, value in given.items() if value]
    if len(modes) != 1:
        raise ConfigError(
            "videorl eval needs exactly one of --model PATH, --endpoint URL --served-model NAME, "
            f"--predictions FILE or --compare A B (got {', '.join(modes) or 'none'})"
        )
    return modes[0]


def _model_source(backend: Any, run: Any, max_new_tokens: int, local: bool) -> dict[str, Any]:
    """What metrics.json records as the answers' source."""
    tools = getattr(backend, "tools", None)
    used = {"tools": list(tools.specs)} if tools is not None else {}
    return {
        ("model" if local else "endpoint"): backend.label,
        **used,
        "think": run.think,
        "max_new_tokens": max_new_tokens,
        "video": to_dict(run.video),
        "prompt_style": run.prompt_style,
    }


def _inputs(
    *paths: str | Path | None, labels: tuple[str, ...] = ("--compare A", "--compare B")
) -> list[tuple[str, str | Path | None]]:
    return list(zip(labels, paths, strict=True))


def endpoint_model_type(
    endpoint: str | None, served_model: str | None, checkpoint: str | None, model_type: str | None
) -> str | None:
    """Check the flags that go with --endpoint; the served model's type: --model-type, else
    that of --checkpoint (its config.json), else None (boxes stay in the records' frame)."""
    from videorl.data.coordinates import check_model_type
    from videorl.models.loading import read_model_type

    if endpoint is None:
        if checkpoint is not None or model_type is not None:
            raise ConfigError(
                "--checkpoint and --model-type describe the model behind --endpoint; "
                "--model reads both from the checkpoint itself"
            )
        return None
    if not served_model:
        raise ConfigError(
            "--endpoint needs --served-model NAME (the model id the server lists at /v1/models)"
        )
    if model_type is not None:
        return check_model_type(model_type, "--model-type")
    return read_model_type(checkpoint) if checkpoint is not None else None


def eval_backend(
    model: str | None,
    run: Any,
    max_new_tokens: int,
    device: str,
    *,
    endpoint: str | None,
    served_model: str | None,
    model_type: str | None,
    concurrency: int,
    api_key: str | None,
    tools: Any = None,
    early_exit: float | None = None,
) -> Any:
    """The HF engine for --model (answering with `tools`, `eval_tools`' pair, when given),
    else the client of --endpoint (boxes in the convention of `model_type`); both prompt
    with the run settings `run`."""
    if model is not None:
        from videorl.eval.backends import HFBackend

        runner, limits = tools if tools is not None else (None, None)
        return HFBackend.from_path(
            model,
            run,
            device=device,
            max_new_tokens=max_new_tokens,
            tools=runner,
            limits=limits,
            early_exit=early_exit,
        )
    from videorl.eval.openai_backend import EndpointBackend

    # --endpoint mode: eval_command's _one_mode and endpoint_model_type require both
    return EndpointBackend(
        cast(str, endpoint),
        cast(str, served_model),
        run,
        model_type=model_type,
        max_new_tokens=max_new_tokens,
        concurrency=concurrency,
        api_key=api_key,
    )


def _compare(paths: tuple[Path, Path], settings: Any, out: Path | None, overwrite: bool) -> None:
    """Print the delta table (and write OUT/compare.md with --out)."""
    from rich.console import Console
    from rich.markdown import Markdown

    from videorl.eval.compare import compare_paths, to_markdown
    from videorl.eval.out_dir import claim_out_dir

    if out is not None:
        claim_out_dir(out, overwrite=overwrite, resume=False, inputs=_inputs(*paths))
    markdown = to_markdown(compare_paths(paths[0], paths[1], settings=settings))
    Console().print(Markdown(markdown))
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "compare.md").write_text(markdown, encoding="utf-8")
