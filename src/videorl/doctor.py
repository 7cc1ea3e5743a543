"""`videorl doctor`: what this machine can run, and whether its versions are supported.

Reports the versions of the packages that decide the training path (torch, CUDA,
transformers, vLLM, flash-attn, peft, ...) against the ranges videorl declares
(`versions.py`, read from the package metadata), the GPUs with their memory, and which
attention kernels and packed-row modes are available here.
"""

from __future__ import annotations

import importlib.util
import platform
from collections.abc import Sequence
from typing import Any

from videorl.versions import check, declared_requirements

# Shown one by one (the rest of the declared requirements are summarized).
KEY_PACKAGES = (
    "torch",
    "torchvision",
    "transformers",
    "tokenizers",
    "peft",
    "vllm",
    "flash-attn",
    "flash-linear-attention",
    "av",
)


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def packages() -> list[dict[str, Any]]:
    """Each key package: installed version, declared range and status."""
    return [
        {
            "package": c.package,
            "installed": c.installed,
            "declared": c.declared,
            "extra": c.extra,
            "status": c.status,
        }
        for c in map(check, KEY_PACKAGES)
    ]


def requirements_summary() -> dict[str, list[str]]:
    """Core requirements by status: what a bare machine still needs (wheels to carry)."""
    out: dict[str, list[str]] = {"ok": [], "missing": [], "outside": []}
    for name, (_, extra) in sorted(declared_requirements().items()):
        if extra is None:
            out.setdefault(check(name).status, []).append(name)
    return out


def gpus() -> dict[str, Any]:
    import torch

    info: dict[str, Any] = {
        "torch_cuda": torch.version.cuda,
        "cuda_available": torch.cuda.is_available(),
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "nccl": None,
        "devices": [],
    }
    if not torch.cuda.is_available():
        return info
    if torch.distributed.is_available() and torch.distributed.is_nccl_available():
        version = torch.cuda.nccl.version()  # a tuple; an int on older torch
        info["nccl"] = ".".join(map(str, version)) if isinstance(version, tuple) else str(version)
    for index in range(torch.cuda.device_count()):
        props = torch.cuda.get_device_properties(index)
        info["devices"].append(
            {
                "index": index,
                "name": props.name,
                "memory_gib": round(props.total_memory / 2**30, 1),
                "capability": f"{props.major}.{props.minor}",
                "multiprocessors": props.multi_processor_count,
            }
        )
    info["bf16"] = torch.cuda.is_bf16_supported()
    return info


def attention_modes(cuda: bool, capability: float) -> list[dict[str, Any]]:
    """`model.attn_implementation` values usable here, and whether `model.packing: auto`
    packs rows with each (a varlen kernel) or pads them."""
    from videorl.models.packing import VARLEN_ATTENTION

    available = {
        "sdpa": (True, "torch"),
        "sdpa_varlen": (True, "videorl (per-row fused sdpa)"),
        "eager": (True, "torch"),
        "flex_attention": (_importable("torch.nn.attention.flex_attention"), "torch"),
        "flash_attention_2": (cuda and _importable("flash_attn"), "flash-attn package, CUDA"),
        "flash_attention_3": (
            cuda and capability >= 9.0 and _importable("flash_attn_interface"),
            "flash-attn 3 (hopper) package, CUDA capability >= 9.0",
        ),
    }
    return [
        {
            "attn_implementation": name,
            "available": ok,
            "needs": needs,
            "packing_auto": "packed rows" if name in VARLEN_ATTENTION else "padded rows",
        }
        for name, (ok, needs) in available.items()
    ]


def linear_attention_kernels() -> dict[str, bool]:
    """Qwen3.5's gated delta net: fast kernels, else transformers' torch fallback."""
    return {
        "flash-linear-attention (fla)": _importable("fla"),
        "causal-conv1d": _importable("causal_conv1d"),
    }


def vllm_engine() -> dict[str, Any]:
    """The installed vLLM as the rollout engine sees it: version, platform, the weight-sync
    path and pause it uses (`rollout/vllm_transfer.py`), and per architecture whether it runs
    it: in the installed vLLM's model registry and parity-tested (tests/vllm), with the
    conditions of vLLM's CPU build."""
    from videorl.rollout.vllm_support import (
        ARCHITECTURES,
        CPU_CONDITIONS,
        SUPPORTED_MODEL_TYPES,
        installed_architectures,
    )

    if not _importable("vllm"):
        return {"installed": None}
    installed = installed_architectures()
    if installed is None:
        return {"installed": "does not import"}
    version, known = installed
    from vllm.platforms import current_platform

    from videorl.rollout.vllm_transfer import sync_features
    from vllm import LLM

    features = sync_features(LLM)
    on_cpu = current_platform.is_cpu()
    architectures = []
    for model_type, architecture in ARCHITECTURES.items():
        if architecture not in known:
            runs, note = False, f"{architecture} is not in this vLLM's model registry"
        elif model_type not in SUPPORTED_MODEL_TYPES:
            runs, note = False, "no parity test (tests/vllm): rollout.engine=vllm falls back"
        else:
            runs, note = True, CPU_CONDITIONS.get(model_type, "") if on_cpu else ""
        architectures.append(
            {"model_type": model_type, "architecture": architecture, "runs": runs, "note": note}
        )
    return {
        "installed": version,
        "platform": str(current_platform.device_type),
        "weight_sync": "native" if features.native_weight_transfer else "reload",
        "pause": features.pause,
        "architectures": architectures,
    }


def collect() -> dict[str, Any]:
    """Everything `videorl doctor` reports, as one JSON-able dict."""
    gpu = gpus()
    devices = gpu["devices"]
    capability = max((float(d["capability"]) for d in devices), default=0.0)
    report: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "packages": packages(),
        "requirements": requirements_summary(),
        "gpu": gpu,
        "attention": attention_modes(bool(devices), capability),
        "linear_attention_kernels": linear_attention_kernels(),
        "vllm": vllm_engine(),
    }
    required_bad = [
        p["package"]
        for p in report["packages"]
        if p["declared"] is not None
        and p["extra"] is None
        and p["status"] in ("missing", "outside")
    ]
    summary = report["requirements"]
    problems = set(required_bad) | set(summary.get("outside", [])) | set(summary.get("missing", []))
    report["problems"] = sorted(problems)
    report["supported"] = not problems
    return report


def render(report: dict[str, Any], console: Any) -> None:
    """Print the report as rich tables."""
    rows = []
    for p in report["packages"]:
        declared = (p["declared"] or "any") + (f" [extra {p['extra']}]" if p["extra"] else "")
        status = p["status"]
        if status == "missing" and (p["extra"] or not p["declared"]):
            status = "not installed (optional)"
        rows.append(
            (p["package"], p["installed"] or "-", declared if p["declared"] else "-", status)
        )
    console.print(_table("packages", ("package", "installed", "supported range", "status"), rows))
    summary = report["requirements"]
    console.print(
        f"core requirements: {len(summary['ok'])} ok"
        + "".join(f"; {k}: {', '.join(v)}" for k, v in summary.items() if k != "ok" and v)
    )
    gpu = report["gpu"]
    console.print(
        f"torch CUDA {gpu['torch_cuda'] or 'none (CPU build)'}, cuDNN {gpu['cudnn'] or '-'}, "
        f"NCCL {gpu['nccl'] or '-'}; {len(gpu['devices'])} GPU(s)"
    )
    for d in gpu["devices"]:
        console.print(
            f"  cuda:{d['index']} {d['name']}: {d['memory_gib']} GiB, capability {d['capability']}, "
            f"{d['multiprocessors']} SMs"
        )
    attention = [
        (a["attn_implementation"], "yes" if a["available"] else "no", a["packing_auto"], a["needs"])
        for a in report["attention"]
    ]
    columns = ("kernel", "available", "model.packing=auto", "needs")
    console.print(_table("attention (model.attn_implementation)", columns, attention))
    kernels = report["linear_attention_kernels"]
    console.print(
        "Qwen3.5 linear attention: "
        + ", ".join(f"{k} {'yes' if v else 'no'}" for k, v in kernels.items())
        + ("" if any(kernels.values()) else " (transformers' torch fallback)")
    )
    render_vllm(report["vllm"], console)
    verdict = (
        "all supported"
        if report["supported"]
        else "NOT supported: " + ", ".join(report["problems"])
    )
    console.print(f"versions: {verdict}")


def render_vllm(engine: dict[str, Any], console: Any) -> None:
    """The vLLM lines of the report."""
    if engine["installed"] is None:
        console.print("vLLM: not installed (rollout.engine=vllm falls back to hf)")
        return
    if engine["installed"] == "does not import":
        console.print("vLLM: installed, but `import vllm` fails")
        return
    sync = "vLLM's weight-transfer API" if engine["weight_sync"] == "native" else "worker reload"
    console.print(
        f"vLLM {engine['installed']} ({engine['platform']}): weight sync by {sync}, "
        f"{'paused generation' if engine['pause'] else 'no pause API'}"
    )
    rows = [
        (a["model_type"], a["architecture"], "yes" if a["runs"] else "no", a["note"])
        for a in engine["architectures"]
    ]
    columns = ("model type", "architecture", "runs", "note")
    console.print(_table("vLLM rollout engine per architecture", columns, rows))


def _table(title: str, columns: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> Any:
    """A rich table titled `title` (left-justified) of `columns` and `rows`."""
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*row)
    return table
