"""The `videorl eval` and `videorl serve` commands (registered in `videorl.cli`).

Only typer is imported here; models, torch and matplotlib load inside the commands, so
`videorl --help` stays fast.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from videorl.config_loader import to_dict
from videorl.errors import ConfigError
from videorl.eval.options import (
    BatchSize,
    Benchmark,
    BenchmarkRoot,
    BodyTimeout,
    Compare,
    Concurrency,
    Controls,
    Device,
    Endpoint,
    EndpointKey,
    EvalModel,
    EvalServedModel,
    Fps,
    Host,
    MaxBatch,
    MaxBodyMb,
    MaxFramePixels,
    MaxFrames,
    MaxN,
    MaxNewTokens,
    MaxPixels,
    MaxQueue,
    MaxRequestFrames,
    MaxRequestPixels,
    MaxSamples,
    MediaRoot,
    MinPixels,
    Out,
    OverwriteEval,
    Port,
    Predictions,
    PromptStyle,
    ResponseBudget,
    ResumeEval,
    ServedModel,
    ServeKey,
    ServeModel,
    Think,
    VideoRoot,
)

_DEFAULT_OUT = Path("runs/eval")


def _print_summary(metrics: dict, out_dir: Path) -> None:
    from rich.console import Console
    from rich.table import Table

    from videorl.eval.controls import gain_rows

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
    counts = ", ".join(f"{k} {v}" for k, v in metrics["counts"].items() if v)
    console.print(f"records: {counts}")
    console.print(
        f"wrote {out_dir}/predictions.jsonl, metrics.json, report.md, samples.jsonl, plots/"
    )


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
    concurrency: Concurrency = 8,
    api_key: EndpointKey = None,
    think: Think = None,
    prompt_style: PromptStyle = None,
    batch_size: BatchSize = 8,
    max_new_tokens: ResponseBudget = 256,
    fps: Fps = None,
    max_frames: MaxFrames = None,
    min_pixels: MinPixels = None,
    max_pixels: MaxPixels = None,
    device: Device = "auto",
    overwrite: OverwriteEval = False,
    resume: ResumeEval = False,
) -> None:
    """Evaluate a checkpoint, an endpoint or a predictions file on a benchmark, or compare runs.

    A checkpoint written by `videorl train` is evaluated with its run's video settings and
    prompt style (`config.yaml` of the run), so eval sees frames as training did; flags override.
    """
    from videorl.eval.runner import evaluate
    from videorl.video.controls import parse_controls

    mode = _one_mode(model=model, endpoint=endpoint, predictions=predictions, compare=compare)
    flags = video_flags(fps, max_frames, min_pixels, max_pixels)
    video, think = eval_video_settings(model, flags, think)
    prompts = eval_prompt_settings(model, prompt_style)
    batch = max(batch_size, concurrency) if endpoint else batch_size
    settings = _eval_settings(benchmark, out, video_root, benchmark_root, max_samples, batch, video)
    if settings is not None and controls:
        settings = dataclasses.replace(settings, controls=parse_controls(controls))
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
        backend = _backend(
            model, endpoint, served_model, concurrency, api_key, think, max_new_tokens, device
        )
        source = _model_source(backend, prompts, think, max_new_tokens, video, model is not None)
        outputs = evaluate(settings, backend=backend, source=source)
    _print_summary(outputs.metrics, outputs.out_dir)


def _claim_eval_out(
    settings: Any, model: str | None, *, overwrite: bool, resume: bool, keep: Path | None
) -> None:
    """Claim the eval's output folder (refusing to overwrite another eval's outputs)."""
    from videorl.eval.runner import claim_out_dir

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


def video_flags(
    fps: float | None, max_frames: int | None, min_pixels: int | None, max_pixels: int | None
) -> dict[str, Any]:
    """The video flags by `VideoConfig` field (None: not given)."""
    return {
        "fps": fps,
        "max_frames": max_frames,
        "min_pixels": min_pixels,
        "max_pixels": max_pixels,
    }


def _model_source(
    backend: Any,
    prompts: dict[str, Any],
    think: bool,
    max_new_tokens: int,
    video: Any,
    local: bool,
) -> dict[str, Any]:
    """Give `backend` the run's prompt style; what metrics.json records as the answers' source."""
    backend.prompt_style = prompts["prompt_style"]
    backend.chat_template_kwargs = prompts["chat_template_kwargs"]
    return {
        ("model" if local else "endpoint"): backend.label,
        "think": think,
        "max_new_tokens": max_new_tokens,
        "video": to_dict(video),
        "prompt_style": prompts["prompt_style"],
    }


def _inputs(
    *paths: str | Path | None, labels: tuple[str, ...] = ("--compare A", "--compare B")
) -> list[tuple[str, str | Path | None]]:
    return list(zip(labels, paths))


def eval_video_settings(
    model: str | None, flags: dict[str, Any], think: bool | None
) -> tuple[Any, bool]:
    """Video settings and think mode for an eval: the flags given, else those of the training
    run that wrote `model` (its `config.yaml`), else the defaults."""
    import dataclasses

    from rich.console import Console

    from videorl.config import find_run_config, load_config
    from videorl.video.decode import VideoConfig

    base, trained_think = VideoConfig(), False
    run = find_run_config(model) if model else None
    if run is not None:
        trained = load_config(run)
        base, trained_think = trained.video, trained.data.think
        Console(stderr=True).print(
            f"video settings and think={think if think is not None else trained_think} from "
            f"{run} (override with --fps/--max-frames/--min-pixels/--max-pixels/--think)"
        )
    changes = {key: value for key, value in flags.items() if value is not None}
    if "max_pixels" in changes and "min_pixels" not in changes:
        changes["min_pixels"] = min(base.min_pixels, changes["max_pixels"])
    video = dataclasses.replace(base, **changes)
    return video, trained_think if think is None else think


def eval_prompt_settings(model: str | None, prompt_style: str | None) -> dict[str, Any]:
    """`prompt_style` and `chat_template_kwargs` for an eval: the flag given, else those of
    the training run that wrote `model` (its `config.yaml`), else videorl's and none."""
    from videorl.config import find_run_config, load_config
    from videorl.data.prompts import check_prompt_style

    settings: dict[str, Any] = {"prompt_style": "videorl", "chat_template_kwargs": {}}
    run = find_run_config(model) if model else None
    if run is not None:
        data = load_config(run).data
        settings = {
            "prompt_style": data.prompt_style,
            "chat_template_kwargs": dict(data.chat_template_kwargs),
        }
    if prompt_style is not None:
        settings["prompt_style"] = check_prompt_style(prompt_style, "--prompt-style")
    return settings


def run_template_kwargs(model: str) -> dict[str, Any]:
    """`enable_thinking` (from `data.think`) and `data.chat_template_kwargs` of the training
    run that wrote `model` (its `config.yaml`), else none: what `videorl serve` applies to
    requests that do not set their own."""
    from videorl.config import find_run_config, load_config
    from videorl.models.chat_template import template_kwargs

    run = find_run_config(model)
    if run is None:
        return {}
    data = load_config(run).data
    return template_kwargs(data.think, data.chat_template_kwargs)


def _backend(
    model: str | None,
    endpoint: str | None,
    served_model: str | None,
    concurrency: int,
    api_key: str | None,
    think: bool,
    max_new_tokens: int,
    device: str,
) -> Any:
    """The HF engine for --model, else the endpoint client."""
    if model is not None:
        from videorl.eval.backends import HFBackend

        return HFBackend.from_path(model, device=device, max_new_tokens=max_new_tokens, think=think)
    if not served_model:
        raise ConfigError(
            "--endpoint needs --served-model NAME (the model id the server lists at /v1/models)"
        )
    from videorl.eval.openai_backend import EndpointBackend

    return EndpointBackend(
        endpoint,
        served_model,
        think=think,
        max_new_tokens=max_new_tokens,
        concurrency=concurrency,
        api_key=api_key,
    )


def _compare(paths: tuple[Path, Path], settings: Any, out: Path | None, overwrite: bool) -> None:
    """Print the delta table (and write OUT/compare.md with --out)."""
    from rich.console import Console
    from rich.markdown import Markdown

    from videorl.eval.compare import compare_paths, to_markdown
    from videorl.eval.runner import claim_out_dir

    if out is not None:
        claim_out_dir(out, overwrite=overwrite, resume=False, inputs=_inputs(*paths))
    markdown = to_markdown(compare_paths(paths[0], paths[1], settings=settings))
    Console().print(Markdown(markdown))
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "compare.md").write_text(markdown, encoding="utf-8")


def serve_command(
    model: ServeModel,
    host: Host = "127.0.0.1",
    port: Port = 8000,
    served_model: ServedModel = None,
    api_key: ServeKey = None,
    media_root: MediaRoot = None,
    max_new_tokens: MaxNewTokens = 1024,
    max_n: MaxN = 8,
    max_body_mb: MaxBodyMb = 64.0,
    max_request_frames: MaxRequestFrames = 256,
    max_frame_pixels: MaxFramePixels = 4096 * 4096,
    max_request_pixels: MaxRequestPixels = 256 * 1280 * 720,
    max_batch: MaxBatch = 8,
    max_queue: MaxQueue = 64,
    body_timeout: BodyTimeout = 30.0,
    fps: Fps = None,
    max_frames: MaxFrames = None,
    min_pixels: MinPixels = None,
    max_pixels: MaxPixels = None,
    device: Device = "auto",
) -> None:
    """Serve a checkpoint as an OpenAI/vLLM-compatible chat-completions endpoint (HF engine).

    MP4s and media paths are sampled with the run's video settings (its `config.yaml`, as
    eval does); flags override. Binds 127.0.0.1 unless --host says otherwise.
    """
    from rich.console import Console

    from videorl.config import run_model_name
    from videorl.eval.backends import HFBackend
    from videorl.serve.app import serve
    from videorl.serve.media import MediaPolicy

    video = _serve_video(model, media_root, video_flags(fps, max_frames, min_pixels, max_pixels))
    limits = _serve_limits(
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
    loaded = HFBackend.from_path(model, device=device).loaded
    serve(
        loaded,
        served_model or run_model_name(model),
        policy=MediaPolicy(video=video, limits=limits, media_root=media_root),
        host=host,
        port=port,
        api_key=api_key,
        template_defaults=run_template_kwargs(model),
        announce=lambda line: console.print(line, highlight=False, soft_wrap=True),
    )


def _serve_video(model: str, media_root: Path | None, flags: dict[str, Any]) -> Any:
    """The video settings of served MP4s (the run's, flags override); checks --media-root."""
    if media_root is not None and not media_root.is_dir():
        raise ConfigError(f"--media-root {media_root} is not a folder; pass an existing folder")
    return eval_video_settings(model, flags, None)[0]


def _serve_limits(
    max_body_mb: float,
    body_timeout: float,
    max_new_tokens: int,
    max_n: int,
    max_request_frames: int,
    max_frame_pixels: int,
    max_request_pixels: int,
    max_batch: int,
    max_queue: int,
) -> Any:
    """The server's bounds from its flags; a bad value is a one-line error naming the flag."""
    from videorl.serve.limits import ServeLimits

    try:
        return ServeLimits(
            max_body_bytes=int(max_body_mb * 1024**2),
            body_timeout_s=body_timeout,
            max_new_tokens=max_new_tokens,
            max_n=max_n,
            max_frames=max_request_frames,
            max_frame_pixels=max_frame_pixels,
            max_request_pixels=max_request_pixels,
            max_batch=max_batch,
            max_queue=max_queue,
        )
    except ConfigError as err:
        raise ConfigError(f"{err} (videorl serve option)") from None
