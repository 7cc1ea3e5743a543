"""GPU proof kit: one command on a bare GPU machine proves the GPU path and measures real-scale
speed and memory, in under 9 minutes on one H200. `scripts/gpu/check.sh OUT` installs the
wheels in .whl/ (`make gpu-wheels`) and runs this.

Parts, in order of value, each in its own process with its own time limit (a part that
fails or runs out of time is recorded, and the next one runs):
1. tests     the CUDA test subset (scripts/gpu/tests): bf16 models, packed = padded, log-probs,
             a train step, a one-GPU NCCL FSDP2 step with checkpoint save/load/merge;
2. pruning   OraRL's headline: update time and peak memory, 4 of 9 rows vs 9 of 9 vs GRPO 8,
             Qwen3.5-4B preset, bf16, gradient checkpointing, frozen vision, ~3.1k visual
             tokens per prompt and 1-2k response tokens per row;
3. mfu       update MFU and tokens/s over micro-batch token budgets (Qwen3-VL-4B preset,
             packed rows);
4. generation  HF engine tokens/s, n=8 x 256 from one video prompt, with and without the
             shared prompt prefill (`rollout.share_prefill`; "n/a" where the engine lacks it);
5. step      the phases of one full OraRL step at the 4B preset;
6. async     `rollout.mode: async` at staleness 1 with its worker on the trainer's GPU (weights
             through CUDA IPC) against sync: steps/s of one OraRL run, a 4-layer model of
             the Qwen3-VL-4B widths;
7. long_video  one long-video row's update at sequence-parallel size 1 (Qwen3-VL-4B preset):
             tokens/s, peak memory and MFU (verl's FLOP convention, over the H200's 989
             TFLOP/s and over a matmul rate measured there), frames doubled to the longest
             row that fits.
Writes OUT/gpu_check.json, OUT/gpu_check.md and OUT/gpu_check.log (rewritten after every
part); the models and data go to --work (default: a temporary folder), not OUT.

    python scripts/gpu/gpu_check.py OUT              # GPU, real-scale presets, < 9 min
    python scripts/gpu/gpu_check.py OUT --cpu --tiny # the same script on a CPU, < 2 min
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import gpu_parts

ROOT = Path(__file__).resolve().parents[2]
# seconds per part: (GPU, CPU --tiny); the whole run stops at --budget-s
LIMITS = {
    "prepare": (60, 60),
    "tests": (90, 150),
    "pruning": (130, 60),
    "mfu": (60, 60),
    "generation": (80, 45),
    "step": (70, 60),
    "async": (100, 90),
    "long_video": (180, 90),
}
# What the GPU image already holds (the device notes' package list, read 2026-11-17; versions
# where they give one). Every core requirement of videorl not in it is installed from a wheel
# listed in scripts/gpu/wheels.txt (tests/test_gpu_kit.py checks that nothing is left out).
GPU_IMAGE = {
    "torch": "2.11.0",
    "torchvision": "0.26.0",
    # transformers 5.17 is there too, under videorl's floor: 5.24 comes as a wheel
    "tokenizers": "0.23.2",
    "huggingface-hub": "1.33.0",
    "safetensors": "0.8.0",
    "accelerate": "1.15.0",
    "numpy": "2.5.2",
    "pyyaml": None,
    "typer": None,
    "rich": None,
    "matplotlib": None,
    "tensorboard": None,
    "pyarrow": None,
    "pillow": None,
    "packaging": None,
    "peft": None,
    "sympy": None,
    "jinja2": None,
    "requests": None,
    "tqdm": None,
    "scipy": None,
    "pandas": None,
    "httpx": None,
    "anyio": None,
    "pytest": None,
    "hypothesis": None,
    "psutil": None,
    "opencv-python-headless": None,
    "regex": None,
}
WHEELS_FILE = ROOT / "scripts" / "gpu" / "wheels.txt"
TITLES = {
    "prepare": "build the preset model (make-tiny --device)",
    "tests": "CUDA test subset (scripts/gpu/tests)",
    "pruning": "OraRL pruning: 4 of 9 vs 9 of 9 vs GRPO 8",
    "mfu": "update MFU over micro-batch budgets",
    "generation": "HF engine generation, shared vs unshared prefill",
    "step": "one full OraRL step, by phase",
    "async": "async RL, trainer and worker on one device, vs sync",
    "long_video": "one long-video update at S = 1, longest row that fits",
}
# parts that load the model `prepare` writes (the others build theirs in memory)
NEEDS_PREPARED = ("pruning", "generation", "step", "async")


def wheel_requirements() -> list[str]:
    """`name==version` lines of scripts/gpu/wheels.txt."""
    lines = (line.split("#")[0].strip() for line in WHEELS_FILE.read_text().splitlines())
    return [line for line in lines if line]


def run_limited(
    command: list[str], limit: float, log: Path, env: dict[str, str]
) -> tuple[str, int]:
    """Run `command` in its own process group, output appended to `log`; kill the whole group
    at `limit` seconds. Returns (status, return code)."""
    with log.open("a") as sink:
        sink.write(f"\n$ {' '.join(command)}  (limit {limit:.0f} s)\n")
        sink.flush()
        child = subprocess.Popen(
            command,
            cwd=ROOT,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            code = child.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
            return "timeout", -9
    return ("ok" if code == 0 else "failed"), code


def prepare_command(args: argparse.Namespace, settings: gpu_parts.Settings) -> list[str]:
    path = gpu_parts.model_path(args.work, settings)
    return [
        sys.executable,
        "-m",
        "videorl",
        "make-tiny",
        str(path),
        "--arch",
        settings.arch,
        "--size",
        settings.size,
        "--device",
        settings.device,
        "--dtype",
        settings.dtype,
    ]


def part_command(args: argparse.Namespace, name: str, settings: gpu_parts.Settings) -> list[str]:
    if name == "tests":
        return gpu_parts.tests_command(settings, args.work, args.tests_k)
    command = [sys.executable, str(Path(__file__)), str(args.out), "--part", name]
    command += ["--work", str(args.work)]
    return command + ["--cpu"] * args.cpu + ["--tiny"] * args.tiny


def headline(name: str, result: dict[str, Any]) -> str:
    """One line of the Markdown table per part."""
    if name == "tests" and "counts" in result:
        counts = result["counts"]
        failed = f" ({', '.join(result['failures'])})" if result["failures"] else ""
        return f"{counts['passed']} passed, {counts['failed']} failed{failed}, {counts['skipped']} skipped"
    if name == "pruning" and "median_seconds" in result:
        s, r, p = result["median_seconds"], result["ratios"], result["peak_gb"]
        peak = {k: max(v) if v and None not in v else None for k, v in p.items()}
        memory = (
            f"; peak GB {peak['orarl_pruned']} / {peak['unpruned']} / {peak['grpo']}"
            if peak["unpruned"]
            else ""
        )
        return (
            f"update s {s['orarl_pruned']:.2f} / {s['unpruned']:.2f} / {s['grpo']:.2f} "
            f"(4 of 9 / 9 of 9 / GRPO 8): {r['update_speedup_vs_unpruned']:.2f}x vs unpruned, "
            f"{r['update_speedup_vs_grpo']:.2f}x vs GRPO{memory}"
        )
    if name == "mfu" and "best" in result:
        best = result["best"]
        return (
            f"best MFU {100 * best['mfu']:.1f}% at {best['micro_batch_tokens']} tokens/micro-batch, "
            f"{best['tokens_per_s']:.0f} tokens/s"
        )
    if name == "generation" and "runs" in result:
        runs = ", ".join(f"{k} {v['tokens_per_s']:.0f} tok/s" for k, v in result["runs"].items())
        return runs + (
            f" ({result['share_prefill_speedup']:.2f}x)"
            if "share_prefill_speedup" in result
            else "; share_prefill n/a"
        )
    if name == "step" and "seconds" in result:
        s = result["seconds"]
        keys = ("decode", "encode", "generate", "reward", "old_logprobs", "update", "other")
        return f"step {s['step']:.1f} s: " + ", ".join(f"{k} {s[k]:.2f}" for k in keys)
    if name == "async" and result:
        runs = [
            f"{k} {v['steps_per_s']:.2f} steps/s"
            if "steps_per_s" in v
            else f"{k} failed: {v['error']}"
            for k, v in result.items()
            if isinstance(v, dict)
        ]
        speedup = f" ({result['speedup']:.2f}x)" if "speedup" in result else ""
        return ", ".join(runs) + speedup
    if name == "long_video" and "longest_fit" in result:
        run, rate = result["longest_fit"], result["peak_flops"]["measured_matmul"]["flops_per_s"]
        return (
            f"S=1 longest {run['frames']} frames = {run['tokens']} tokens: "
            f"{run['tokens_per_s']:.0f} tokens/s, peak {run['peak_gb']} GB, MFU "
            f"{100 * run['mfu_spec']:.1f}% of 989 / {100 * run['mfu_measured']:.1f}% of "
            f"{rate / 1e12:.3g} TFLOP/s measured; stopped by {result.get('stopped_by', 'the part limit')}"
        )
    if name == "prepare" and "reused" in result:
        return f"{result['model']} reused from {result['reused']}"
    if name == "prepare" and "seconds" in result:
        return f"{result['model']} built in {result['seconds']:.1f} s"
    return "-"


def write_report(out: Path, report: dict[str, Any]) -> None:
    (out / "gpu_check.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
    lines = [
        f"# GPU check, {report['started']}",
        "",
        (
            f"mode: {report['mode']}; machine: {', '.join(report['machine']['gpus']) or 'no GPU'}; "
            f"torch {report['machine']['torch']}, transformers {report['machine']['transformers']}; "
            "random-init weights of the published sizes"
        ),
        "",
        "| part | status | seconds (limit) | result |",
        "|---|---|---|---|",
    ]
    for name, part in report["parts"].items():
        lines.append(
            f"| {name}: {TITLES[name]} | {part['status']} | {part['seconds']:.0f} ({part['limit_s']:.0f}) "
            f"| {headline(name, part.get('result', {}))} |"
        )
    lines += ["", f"total {report['seconds']:.0f} s.", ""]
    (out / "gpu_check.md").write_text("\n".join(lines))


def machine() -> dict[str, Any]:
    import torch
    import transformers

    gpus = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return {"torch": torch.__version__, "transformers": transformers.__version__, "gpus": gpus}


def orchestrate(args: argparse.Namespace, settings: gpu_parts.Settings) -> int:
    from videorl.doctor import collect

    out, started = args.out, time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    log = out / "gpu_check.log"
    log.write_text("")
    report: dict[str, Any] = {
        "started": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "mode": "cpu --tiny" if args.cpu else "gpu, real-scale presets",
        "settings": asdict(settings),
        "machine": machine(),
        "doctor": collect(),
        "parts": {},
    }
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "TOKENIZERS_PARALLELISM": "false"}
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(ROOT / "src"), str(ROOT), env.get("PYTHONPATH")])
    )
    prepared = any(name in NEEDS_PREPARED for name in args.parts)
    steps = [("prepare", prepare_command(args, settings))] if prepared else []
    steps += [(name, part_command(args, name, settings)) for name in args.parts]
    env.update(gpu_parts.tests_env(settings))
    args.work.mkdir(parents=True, exist_ok=True)
    for name, command in steps:
        left = args.budget_s - (time.perf_counter() - started)
        limit = min(LIMITS[name][1 if args.cpu else 0], left)
        entry: dict[str, Any] = {"limit_s": round(limit, 1), "seconds": 0.0}
        built = gpu_parts.model_path(args.work, settings) / "config.json"
        if name == "prepare" and built.is_file():  # a rerun in the same --work
            entry.update(status="ok", result={"model": f"{settings.arch} {settings.size}"})
            entry["result"]["reused"] = str(built.parent)
        elif limit < 10:
            entry["status"] = "skipped: the time budget is spent"
        else:
            began = time.perf_counter()
            print(
                f"[{time.perf_counter() - started:5.0f} s] {name}: {TITLES[name]} (limit {limit:.0f} s)",
                flush=True,
            )
            entry["status"], entry["returncode"] = run_limited(command, limit, log, env)
            entry["seconds"] = round(time.perf_counter() - began, 1)
            result_file = args.work / "parts" / f"{name}.json"
            if name == "prepare":
                entry["result"] = {
                    "model": f"{settings.arch} {settings.size}",
                    "seconds": entry["seconds"],
                }
            elif name == "tests":
                entry["result"] = gpu_parts.tests_result(args.work, args.tests_k)
            elif result_file.is_file():
                entry["result"] = json.loads(result_file.read_text())
            print(
                f"        {entry['status']} in {entry['seconds']:.0f} s: {headline(name, entry.get('result', {}))}",
                flush=True,
            )
        report["parts"][name] = entry
        report["seconds"] = round(time.perf_counter() - started, 1)
        write_report(out, report)
    print((out / "gpu_check.md").read_text())
    return 0 if all(p["status"] == "ok" for p in report["parts"].values()) else 1


def run_part(args: argparse.Namespace, settings: gpu_parts.Settings) -> None:
    import torch

    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if not settings.cuda:
        torch.set_num_threads(1)  # shared CI cores: one thread per process waits least
    torch.manual_seed(0)
    recorder = gpu_parts.Recorder(args.work / "parts" / f"{args.part}.json")
    gpu_parts.PARTS[args.part](settings, args.work, recorder)


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "out", type=Path, help="gpu_check.json, gpu_check.md and gpu_check.log go here"
    )
    parser.add_argument("--cpu", action="store_true", help="run on the CPU (with --tiny: < 2 min)")
    parser.add_argument("--tiny", action="store_true", help="tiny models and lengths")
    parser.add_argument(
        "--work", type=Path, default=None, help="models and data (default: a temp folder)"
    )
    parser.add_argument(
        "--parts", default=",".join(gpu_parts.PARTS), help="comma-separated parts to run"
    )
    parser.add_argument(
        "--budget-s",
        type=float,
        default=None,
        help="stop starting parts after this (GPU 540, CPU 300)",
    )
    parser.add_argument("--tests-k", default=None, help="pytest -k expression for the tests part")
    parts = [name for name, part in gpu_parts.PARTS.items() if part]
    parser.add_argument("--part", choices=parts, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.parts = [p for p in args.parts.split(",") if p]
    unknown = [p for p in args.parts if p not in gpu_parts.PARTS]
    if unknown:
        parser.error(
            f"--parts: unknown {', '.join(unknown)}; choose from {', '.join(gpu_parts.PARTS)}"
        )
    args.work = args.work or Path(tempfile.gettempdir()) / "videorl-gpu-check"
    args.budget_s = args.budget_s or (300.0 if args.cpu else 540.0)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.cpu and not args.tiny:
        print("note: --cpu without --tiny builds the real-scale presets on the CPU (slow)")
    settings = gpu_parts.Settings.cpu_tiny() if args.tiny else gpu_parts.Settings()
    if args.cpu:
        settings = gpu_parts.replace(settings, device="cpu", dtype="float32")
    if args.part:
        run_part(args, settings)
        return 0
    import torch

    if not args.cpu and not torch.cuda.is_available():
        print("error: torch sees no CUDA GPU; run with --cpu --tiny on a CPU", file=sys.stderr)
        return 2
    return orchestrate(args, settings)


if __name__ == "__main__":
    sys.exit(main())
