"""Recipes ship with the package: a built wheel holds them, an install resolves them by name,
`videorl recipes` lists them, and the repo's configs/ is the same files."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from videorl.api import CONFIG_DIR, packaged_recipes
from videorl.cli import app

pytestmark = pytest.mark.slow  # multi-process or whole-run: `make test`, not `make test-fast`

ROOT = Path(__file__).resolve().parents[1]


def test_recipes_command_lists_every_packaged_recipe():
    names = set(packaged_recipes())
    assert {"quickstart", "grpo", "orarl", "taro", "opdvr", "grpd"} <= names
    result = CliRunner().invoke(app, ["recipes"])
    assert result.exit_code == 0, result.output
    for name in names:
        assert name in result.output


def test_configs_folder_is_the_package_recipes():
    configs = ROOT / "configs"
    assert configs.resolve() == CONFIG_DIR.resolve()
    assert {p.name for p in configs.glob("*.yaml")} == {p.name for p in CONFIG_DIR.glob("*.yaml")}


@pytest.fixture(scope="module")
def installed_wheel(tmp_path_factory) -> tuple[Path, Path]:
    """Build a wheel from a clean copy of the sources and install it (no deps) into a folder."""
    pytest.importorskip("setuptools")  # the build backend, used without build isolation
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    shutil.copytree(
        ROOT / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
    )
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(work / "dist"), "."],
        cwd=source,
        check=True,
        timeout=300,
    )
    (wheel,) = (work / "dist").glob("videorl-*.whl")
    site = work / "site"
    subprocess.run(
        [*pip, "install", "--no-deps", "--target", str(site), str(wheel)], check=True, timeout=300
    )
    return wheel, site


def test_wheel_contains_the_recipes(installed_wheel):
    wheel, _ = installed_wheel
    names = set(zipfile.ZipFile(wheel).namelist())
    for recipe in CONFIG_DIR.glob("*.yaml"):
        assert f"videorl/recipes/{recipe.name}" in names


def test_installed_wheel_resolves_recipes_by_name(installed_wheel, tmp_path):
    _, site = installed_wheel
    env = {**os.environ, "PYTHONPATH": str(site)}  # the installed copy, not the source tree
    script = (
        "import videorl.api as a, videorl.cli as c; from videorl.config import load_config; "
        "p = a.resolve_config_path('quickstart'); load_config(p); print(p); "
        "c.app(['recipes'], standalone_mode=False)"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        check=False,
        cwd=tmp_path,
        env={**env, "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    resolved = Path(result.stdout.splitlines()[0].strip())
    assert resolved.is_relative_to(site) and resolved.name == "quickstart.yaml"
    assert "quickstart" in result.stdout and str(site / "videorl" / "recipes") in result.stdout


def test_video_extra_is_what_plain_transformers_needs_for_video_paths(tiny_model_dir, tmp_path):
    """A checkpoint's processor given a video *path* decodes it with torchcodec (+ FFmpeg);
    the `video` extra declares it and the README says so."""
    import tomllib

    from transformers import AutoProcessor
    from transformers.utils.import_utils import is_torchcodec_usable

    from videorl.data.loaders import load_records
    from videorl.data.synth import synthesize

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert any(spec.startswith("torchcodec") for spec in extras["video"])
    assert "videorl[video]" in (ROOT / "README.md").read_text()
    video = load_records(synthesize(tmp_path, ["tg"], n=1)).records[0].video.path
    processor = AutoProcessor.from_pretrained(tiny_model_dir())
    if is_torchcodec_usable(decode="video"):
        out = processor.video_processor(videos=[video], return_tensors="pt")
        assert out["pixel_values_videos"].numel() > 0
    else:
        with pytest.raises(ImportError, match="torchcodec"):
            processor.video_processor(videos=[video], return_tensors="pt")
