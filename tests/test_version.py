"""One version source: `videorl.__version__` is the installed metadata of pyproject.toml's."""

from __future__ import annotations

import tomllib
from pathlib import Path

import videorl

ROOT = Path(__file__).resolve().parents[1]


def test_version_comes_from_the_package_metadata():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert videorl.__version__ == project["version"]
    assert f"## {project['version']}" in (ROOT / "CHANGELOG.md").read_text()
