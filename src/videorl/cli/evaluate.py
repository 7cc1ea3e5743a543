"""`videorl eval`, `videorl serve`, `videorl demo` and `videorl score`: answering and scoring.

`eval` and `serve` are `api.evaluate` and `api.serve` with a flag per parameter
(`cli/options.py`); models, torch, matplotlib and the server load inside them, so
`videorl --help` stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from videorl import api
from videorl.cli.options import EVAL, SERVE, EarlyExitConfidence, flags_of
from videorl.cli.output import console


@flags_of(api.evaluate, EVAL)
def eval_command(**flags: Any) -> None:
    """Evaluate a checkpoint, an endpoint or a predictions file on a benchmark, or compare runs.

    A checkpoint written by `videorl train` (--model, or --checkpoint for the one behind
    --endpoint) is evaluated with its run's settings (`config.yaml` of the run: video
    sampling, think mode, prompt style, template variables, coordinates), so eval prompts
    it as training did; flags override. With --tools, the model answers with tools in the
    trainer's multi-turn loop and again without them (docs/tools.md).
    """
    outputs = api.evaluate(**flags)
    if outputs is not None:
        _print_summary(outputs.metrics, outputs.out_dir)


@flags_of(api.serve, SERVE)
def serve_command(**flags: Any) -> None:
    """Serve a checkpoint as an OpenAI/vLLM-compatible chat-completions endpoint (HF engine).

    The run's settings (its `config.yaml`, as eval reads them) apply: MP4s and media paths
    are sampled with its video settings (flags override), and its think mode and
    `data.chat_template_kwargs` are the chat template's defaults (a request's own win).
    Binds 127.0.0.1 unless --host says otherwise.
    """
    api.serve(**flags)


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


def demo(
    model: Path = typer.Option(
        ...,
        "--model",
        help="Checkpoint folder or Hugging Face Hub id (org/name[@rev]) of a vision-language model.",
    ),
    host: str = typer.Option(
        "127.0.0.1", help="Address to bind; 0.0.0.0 opens the demo to your network."
    ),
    port: int | None = typer.Option(None, help="Port (default: the first free one from 7860)."),
    share: bool = typer.Option(False, "--share", help="Also make a public gradio share link."),
    max_duration: float = typer.Option(600.0, help="Longest video accepted, in seconds."),
    device: str = typer.Option("auto", help="auto (cuda if available) | cpu | cuda | cuda:N."),
    auth: str | None = typer.Option(
        None, envvar="VIDEORL_DEMO_AUTH", help="USER:PASS a visitor must give (needed by --share)."
    ),
    max_upload_mb: float = typer.Option(500.0, help="Largest video upload accepted, in MB."),
    max_frames: int = typer.Option(512, help="Most frames a question may decode."),
    early_exit_confidence: EarlyExitConfidence = None,
) -> None:
    """Web app: ask a video a question and see the answer on its timeline."""
    from videorl.demo.guard import DemoLimits, parse_auth
    from videorl.eval.commands import check_early_exit

    parse_auth(auth, share)  # a public link without a password is refused before anything loads
    check_early_exit(early_exit_confidence, model=str(model))
    limits = DemoLimits(max_upload_mb=max_upload_mb, max_frames=max_frames)
    from videorl.demo.app import serve

    serve(
        model,
        host=host,
        port=port,
        share=share,
        max_duration=max_duration,
        device=device,
        auth=auth,
        limits=limits,
        early_exit=early_exit_confidence,
    )


def score(
    records: Path = typer.Option(
        ..., help="Records JSONL (generic record format) with the ground truth."
    ),
    responses: Path = typer.Option(
        ..., help='JSONL of {"id": ..., "response": ...} (one model output per line).'
    ),
    out: Path | None = typer.Option(None, help="Write each row's reward components here (JSONL)."),
    overrides: list[str] | None = typer.Argument(
        None, help="reward.* overrides, e.g. reward.tg_shaping=iou_v2"
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing --out file."),
) -> None:
    """Score given response texts with the training rewards and print a summary per family."""
    import json

    from videorl.config.keys import check_recipe_keys

    check_recipe_keys(None, overrides or [])  # a typo, before torch loads
    from videorl.config import load_config
    from videorl.errors import ConfigError
    from videorl.outputs import refuse_own_inputs
    from videorl.rewards.score_file import score_file

    if out is not None:
        refuse_own_inputs(out, [("--records", records), ("--responses", responses)], "--out")
        if out.exists() and not (overwrite and out.is_file()):
            raise ConfigError(
                f"--out {str(out)!r} already exists; pass --overwrite to replace it "
                "or choose another file"
            )

    reward_config = load_config(None, overrides or []).reward
    summary = score_file(records, responses, out, reward_config)
    console.print_json(json.dumps(summary))
