"""The `videorl eval` and `videorl serve` commands (registered in `videorl.cli`).

Only typer is imported here; models, torch and matplotlib load inside the commands, so
`videorl --help` stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from videorl.config_loader import to_dict
from videorl.errors import ConfigError

_DEFAULT_OUT = Path("runs/eval")


def _print_summary(metrics: dict, out_dir: Path) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    for family, summary in metrics["families"].items():
        table = Table(title=f"{family} (n={summary['n']}, %)")
        for name in summary["metrics"]:
            table.add_column(name, justify="right")
        table.add_row(*(f"{v:.1f}" for v in summary["metrics"].values()))
        console.print(table)
    counts = ", ".join(f"{k} {v}" for k, v in metrics["counts"].items() if v)
    console.print(f"records: {counts}")
    console.print(
        f"wrote {out_dir}/predictions.jsonl, metrics.json, report.md, samples.jsonl, plots/"
    )


def eval_command(
    model: str | None = typer.Option(
        None,
        "--model",
        help="Checkpoint folder or Hugging Face Hub id (org/name[@rev]) to run (HF engine).",
    ),
    benchmark: str | None = typer.Option(
        None,
        "--benchmark",
        help="A data file (records/vtg/timer1/mcq/math/verl/easyr1/orarl format), a folder "
        "or Hugging Face dataset id (org/name[@split], test split by default), or a benchmark "
        "name: charades_sta | activitynet_captions | qvhighlights | tvgbench.",
    ),
    video_root: str | None = typer.Option(
        None,
        "--video-root",
        help="Folder that media paths are relative to (default: the annotation file's folder).",
    ),
    benchmark_root: str | None = typer.Option(
        None,
        "--benchmark-root",
        help="Where named benchmarks' annotation files are "
        "(default: --video-root, else ./benchmarks).",
    ),
    out: Path | None = typer.Option(
        None, "--out", help="Output folder (default runs/eval/<benchmark>)."
    ),
    max_samples: int | None = typer.Option(
        None, "--max-samples", help="Evaluate only the first N records."
    ),
    predictions: Path | None = typer.Option(
        None,
        "--predictions",
        help="Score this JSONL of {id, response} lines instead of running a model.",
    ),
    compare: tuple[Path, Path] | None = typer.Option(
        None,
        "--compare",
        help="Delta table B - A of two metrics.json / eval folders / predictions files.",
    ),
    endpoint: str | None = typer.Option(
        None,
        "--endpoint",
        help="OpenAI-compatible server URL (vLLM, `videorl serve`), e.g. http://127.0.0.1:8000/v1.",
    ),
    served_model: str | None = typer.Option(
        None, "--served-model", help="Model name at the endpoint (see its /v1/models)."
    ),
    concurrency: int = typer.Option(
        8, "--concurrency", help="Concurrent requests to the endpoint."
    ),
    api_key: str | None = typer.Option(
        None, "--api-key", envvar="OPENAI_API_KEY", help="Bearer token for the endpoint."
    ),
    think: bool | None = typer.Option(
        None,
        "--think/--no-think",
        help="Ask for a <think> block before the answer (default: as the model was trained "
        "(data.think of its run), else no).",
    ),
    prompt_style: str | None = typer.Option(
        None,
        "--prompt-style",
        help="Prompt templates: videorl, orarl or taro (the published ones, to reproduce a "
        "paper's table; default: data.prompt_style of the model's run, else videorl).",
    ),
    batch_size: int = typer.Option(
        8, "--batch-size", help="Prompts per generate call (HF engine)."
    ),
    max_new_tokens: int = typer.Option(256, "--max-new-tokens", help="Response budget in tokens."),
    fps: float | None = typer.Option(None, "--fps", help="Frame sampling rate (video.fps)."),
    max_frames: int | None = typer.Option(
        None, "--max-frames", help="Frames per video at most (video.max_frames)."
    ),
    min_pixels: int | None = typer.Option(
        None, "--min-pixels", help="Pixels per frame at least (video.min_pixels)."
    ),
    max_pixels: int | None = typer.Option(
        None, "--max-pixels", help="Pixels per frame at most (video.max_pixels)."
    ),
    device: str = typer.Option("auto", "--device", help="auto | cpu | cuda | cuda:N."),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="Replace the outputs of an earlier eval in --out."
    ),
    resume: bool = typer.Option(
        False, "--resume", help="Continue the predictions of an interrupted eval in --out."
    ),
) -> None:
    """Evaluate a checkpoint, an endpoint or a predictions file on a benchmark, or compare runs.

    A checkpoint written by `videorl train` is evaluated with its run's video settings and
    prompt style (`config.yaml` of the run), so eval sees frames as training did; flags override.
    """
    from videorl.eval.runner import EvalSettings, claim_out_dir, evaluate

    modes = [
        name
        for name, given in (
            ("--model", model),
            ("--endpoint", endpoint),
            ("--predictions", predictions),
            ("--compare", compare),
        )
        if given
    ]
    if len(modes) != 1:
        raise ConfigError(
            "videorl eval needs exactly one of --model PATH, --endpoint URL --served-model NAME, "
            f"--predictions FILE or --compare A B (got {', '.join(modes) or 'none'})"
        )
    video, think = eval_video_settings(
        model,
        {"fps": fps, "max_frames": max_frames, "min_pixels": min_pixels, "max_pixels": max_pixels},
        think,
    )
    prompts = eval_prompt_settings(model, prompt_style)
    settings = None
    if benchmark is not None:
        settings = EvalSettings(
            benchmark=benchmark,
            out_dir=out or _DEFAULT_OUT / Path(benchmark).stem,
            video_root=video_root,
            benchmark_root=benchmark_root,
            max_samples=max_samples,
            batch_size=max(batch_size, concurrency) if endpoint else batch_size,
            video=video,
        )
    if compare:
        if out is not None:
            claim_out_dir(out, overwrite=overwrite, resume=False, inputs=_inputs(*compare))
        _compare(compare, settings, out)
        return
    if settings is None:
        raise ConfigError(f"videorl eval {modes[0]} needs --benchmark NAME|FILE")
    bench_file = benchmark if Path(benchmark).exists() else None
    claim_out_dir(
        settings.out_dir,
        overwrite=overwrite,
        resume=resume,
        inputs=_inputs(model, bench_file, labels=("--model", "--benchmark")),
        keep=predictions,
    )
    source: dict = {
        "think": think,
        "max_new_tokens": max_new_tokens,
        "video": to_dict(video),
        "prompt_style": prompts["prompt_style"],
    }
    if predictions is not None:
        outputs = evaluate(
            settings, predictions=predictions, source={"predictions": str(predictions)}
        )
    else:
        backend = _backend(
            model, endpoint, served_model, concurrency, api_key, think, max_new_tokens, device
        )
        backend.prompt_style = prompts["prompt_style"]
        backend.chat_template_kwargs = prompts["chat_template_kwargs"]
        source = {("model" if model else "endpoint"): backend.label, **source}
        outputs = evaluate(settings, backend=backend, source=source)
    _print_summary(outputs.metrics, outputs.out_dir)


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


def _compare(paths: tuple[Path, Path], settings: Any, out: Path | None) -> None:
    """Print the delta table (and write OUT/compare.md with --out)."""
    from rich.console import Console
    from rich.markdown import Markdown

    from videorl.eval.compare import compare_paths, to_markdown

    markdown = to_markdown(compare_paths(paths[0], paths[1], settings=settings))
    Console().print(Markdown(markdown))
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "compare.md").write_text(markdown, encoding="utf-8")


def serve_command(
    model: str = typer.Option(
        ..., "--model", help="Checkpoint folder or Hugging Face Hub id (org/name[@rev]) to serve."
    ),
    host: str = typer.Option(
        "127.0.0.1", "--host", help="Address to bind (127.0.0.1: this machine only)."
    ),
    port: int = typer.Option(8000, "--port", help="Port (0: any free port)."),
    served_model: str | None = typer.Option(
        None, "--served-model", help="Model id clients send (default: run/checkpoint name)."
    ),
    api_key: str | None = typer.Option(
        None, "--api-key", envvar="VIDEORL_API_KEY", help="Require 'Authorization: Bearer KEY'."
    ),
    media_root: Path | None = typer.Option(
        None, "--media-root", help="Allow video_url/image_url paths inside this folder only."
    ),
    max_new_tokens: int = typer.Option(
        1024, "--max-new-tokens", help="Largest max_tokens a request may ask for."
    ),
    max_n: int = typer.Option(8, "--max-n", help="Most choices (n) per request."),
    max_body_mb: float = typer.Option(64.0, "--max-body-mb", help="Largest request body, MiB."),
    max_request_frames: int = typer.Option(
        256, "--max-frames-per-request", help="Most per-frame images in one video_url."
    ),
    max_frame_pixels: int = typer.Option(
        4096 * 4096, "--max-frame-pixels", help="Largest image/frame (width x height)."
    ),
    max_request_pixels: int = typer.Option(
        256 * 1280 * 720, "--max-request-pixels", help="Source pixels one request may decode."
    ),
    max_batch: int = typer.Option(8, "--max-batch", help="Requests generated together."),
    max_queue: int = typer.Option(64, "--max-queue", help="Requests in flight (more: 503)."),
    body_timeout: float = typer.Option(
        30.0,
        "--body-timeout",
        help="Seconds a client may take to send its headers (then closed) or body (then 408).",
    ),
    fps: float | None = typer.Option(None, "--fps", help="Sampling fps of MP4s (video.fps)."),
    max_frames: int | None = typer.Option(
        None, "--max-frames", help="Frames sampled from an MP4 at most (video.max_frames)."
    ),
    min_pixels: int | None = typer.Option(None, "--min-pixels", help="video.min_pixels."),
    max_pixels: int | None = typer.Option(None, "--max-pixels", help="video.max_pixels."),
    device: str = typer.Option("auto", "--device", help="auto | cpu | cuda | cuda:N."),
) -> None:
    """Serve a checkpoint as an OpenAI/vLLM-compatible chat-completions endpoint (HF engine).

    MP4s and media paths are sampled with the run's video settings (its `config.yaml`, as
    eval does); flags override. Binds 127.0.0.1 unless --host says otherwise.
    """
    from rich.console import Console

    from videorl.config import run_model_name
    from videorl.eval.backends import HFBackend
    from videorl.serve.app import serve
    from videorl.serve.limits import ServeLimits
    from videorl.serve.media import MediaPolicy

    if media_root is not None and not media_root.is_dir():
        raise ConfigError(f"--media-root {media_root} is not a folder; pass an existing folder")
    video, _ = eval_video_settings(
        model,
        {"fps": fps, "max_frames": max_frames, "min_pixels": min_pixels, "max_pixels": max_pixels},
        None,
    )
    try:
        limits = ServeLimits(
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
