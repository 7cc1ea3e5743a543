"""The parts of `videorl eval` (`videorl.api.evaluate` runs them in order): its modes, its
output folder, its backends and its one-line checks.

Nothing heavy is imported here; models, torch and matplotlib load inside the functions, so
`videorl --help` stays fast.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, cast

from videorl.config.loader import to_dict
from videorl.errors import ConfigError

_DEFAULT_OUT = Path("runs/eval")


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


def one_mode(**given: Any) -> str:
    """The one flag of --model, --endpoint, --predictions and --compare that is given."""
    modes = [f"--{name}" for name, value in given.items() if value]
    if len(modes) != 1:
        raise ConfigError(
            "videorl eval needs exactly one of --model PATH, --endpoint URL --served-model NAME, "
            f"--predictions FILE or --compare A B (got {', '.join(modes) or 'none'})"
        )
    return modes[0]


def check_early_exit(
    confidence: float | None, *, model: str | None = None, tools: str | None = None
) -> None:
    """`--early-exit-confidence` is a probability, and needs the in-process engine (the gate
    reads each step's scores) answering in one turn."""
    if confidence is None:
        return
    if not 0.0 <= confidence <= 1.0:
        raise ConfigError(
            f"--early-exit-confidence={confidence:g} is not a probability; give a value in "
            "[0, 1] (VideoAuto-R1: 0.97)"
        )
    if model is None:
        raise ConfigError(
            "--early-exit-confidence needs --model: the in-process engine reads each step's "
            "token probabilities (an endpoint does not return them)"
        )
    if tools:
        raise ConfigError("--early-exit-confidence answers in one turn; drop --tools")


def with_controls(settings: Any, controls: str | None, skip_invalid: bool) -> Any:
    """`settings` (None stays None) with the video controls of `--controls` and `--skip-invalid`."""
    from videorl.video.controls import parse_controls

    if settings is None:
        return None
    return dataclasses.replace(
        settings, controls=parse_controls(controls), skip_invalid=skip_invalid
    )


def evaluate_predictions(settings: Any, predictions: Path) -> Any:
    """Score the predictions file `predictions` (`--predictions`)."""
    from videorl.eval.runner import evaluate

    source: dict = {"predictions": str(predictions)}
    return evaluate(settings, predictions=predictions, source=source)


def evaluate_backend(
    settings: Any,
    backend: Any,
    source: dict[str, Any],
    early_exit: float | None,
    tool_modules: str | None,
) -> Any:
    """Answer and score with `backend`; `source` (what metrics.json records) gains the
    early-exit threshold and the modules of the tools that answer, when given."""
    from videorl.eval.runner import evaluate

    if early_exit is not None:
        source["early_exit_confidence"] = early_exit
    if tool_modules:
        source["tool_modules"] = _comma_list(tool_modules)
    return evaluate(settings, backend=backend, source=source)


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


def claim_eval_out(
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


def eval_settings(
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


def model_source(backend: Any, run: Any, max_new_tokens: int, local: bool) -> dict[str, Any]:
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

    # --endpoint mode: api.evaluate's one_mode and endpoint_model_type require both
    return EndpointBackend(
        cast(str, endpoint),
        cast(str, served_model),
        run,
        model_type=model_type,
        max_new_tokens=max_new_tokens,
        concurrency=concurrency,
        api_key=api_key,
    )


def compare(paths: tuple[Path, Path], settings: Any, out: Path | None, overwrite: bool) -> None:
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
