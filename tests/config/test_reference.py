"""The configuration reference (docs/config.md) is generated from the config dataclasses:
every field has an attribute docstring, the committed page is what the generator writes
now, and the reader takes descriptions from those docstrings only."""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from videorl.config import Config
from videorl.config.reference import all_fields, field_sources, render, walk

ROOT = Path(__file__).resolve().parents[2]


def _keys(cls: type, prefix: str = "") -> list[str]:
    """Every dotted key of a config dataclass, found independently of the generator."""
    hints = typing.get_type_hints(cls)
    keys = []
    for f in dataclasses.fields(cls):
        keys.append(prefix + f.name)
        hint = hints[f.name]
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            keys += _keys(hint, f"{prefix}{f.name}.")
    return keys


def _sections(cls: type) -> list[type]:
    found = [cls]
    for hint in typing.get_type_hints(cls).values():
        if isinstance(hint, type) and dataclasses.is_dataclass(hint) and hint not in found:
            found += [s for s in _sections(hint) if s not in found]
    return found


def test_every_config_field_has_an_attribute_docstring():
    missing = [
        f"{cls.__name__}.{name}"
        for cls in _sections(Config)
        for name, (_, description) in field_sources(cls).items()
        if not description.strip()
    ]
    assert not missing, (
        f"{len(missing)} config fields have no attribute docstring (a string literal right "
        f"below the field, which docs/config.md shows): {missing}"
    )


def test_every_config_key_has_a_description_in_the_reference():
    rows = {row.key: row for row in all_fields()}
    keys = _keys(Config)
    assert len(keys) > 150 and sorted(rows) == sorted(keys)
    undocumented = [key for key in keys if not rows[key].description.strip()]
    assert not undocumented, f"config keys with no description: {undocumented}"
    page = render()
    missing = [key for key in keys if f"| `{key}` |" not in page]
    assert not missing, f"keys missing from the rendered reference: {missing}"


def test_every_section_has_a_docstring():
    assert all(group.summary for group in walk()), [g.key for g in walk() if not g.summary]


def test_committed_reference_is_what_the_generator_writes():
    committed = (ROOT / "docs" / "config.md").read_text(encoding="utf-8")
    assert committed == render(), (
        "docs/config.md is stale; regenerate it: python -m videorl.config.reference > docs/config.md"
    )


def test_defaults_and_choices_come_from_the_code():
    rows = {row.key: row for row in all_fields()}
    assert rows["rollout.n"].default == str(Config().rollout.n)
    assert rows["model.dtype"].choices == ("float32", "bfloat16", "float16")
    assert rows["model.packing"].choices == ("auto",) and rows["model.packing"].other_types == (
        "bool",
    )
    assert rows["model.lora.target_modules"].default.startswith('["q_proj"')  # factory called
    assert rows["trainer.wandb_project"].default == "null"
    assert rows["algorithm.pruning"].group == "algorithm.pruning"
    assert "One of: `hf`, `vllm`." in render()


def test_only_the_cli_imports_the_reference_module():
    """`videorl keys` reads it; the config and the runtime never do."""
    importers = [
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "src" / "videorl").rglob("*.py")
        if path.name != "reference.py" and "videorl.config.reference" in path.read_text()
    ]
    assert importers == ["src/videorl/cli/info.py"], importers


# A toy config: the reader must take each field's description from its docstring only.


@dataclass(frozen=True)
class _ToyInner:
    """An inner section."""

    depth: float = 1.5
    """Depth in metres."""


@dataclass(frozen=True)
class _Toy:
    """A toy section.

    Second paragraph."""

    fps: float = 2.0
    """Frames per second
    (continued on a second line)."""
    mode: Literal["fast", "slow"] = "fast"
    """How hard to try."""
    budget: int = 256  # a comment is not a description
    undocumented: str | None = None

    names: tuple[str, ...] = field(default_factory=lambda: ("a", "b"))
    inner: _ToyInner = field(default_factory=_ToyInner)


def test_toy_dataclass_descriptions_are_read_from_the_source():
    sources = field_sources(_Toy)
    assert sources["fps"] == ("float", "Frames per second (continued on a second line).")
    assert sources["mode"] == ("Literal['fast', 'slow']", "How hard to try.")
    assert sources["budget"] == ("int", "")
    assert sources["undocumented"] == ("str | None", "")
    assert sources["names"] == ("tuple[str, ...]", "")


def test_toy_dataclass_walk_renders_sections_defaults_and_choices():
    groups = list(walk(_Toy))
    assert [g.key for g in groups] == ["", "inner"]
    assert groups[0].summary == "A toy section." and groups[1].summary == "An inner section."
    rows = {row.key: row for row in all_fields(_Toy)}
    assert list(rows) == ["fps", "mode", "budget", "undocumented", "names", "inner", "inner.depth"]
    assert rows["mode"].choices == ("fast", "slow") and rows["mode"].default == '"fast"'
    assert rows["undocumented"].default == "null" and rows["undocumented"].description == ""
    assert rows["names"].default == '["a", "b"]'
    assert rows["inner"].description == "An inner section." and rows["inner"].group == "inner"
    assert rows["inner.depth"].description == "Depth in metres."
    page = render(_Toy)
    assert "| `budget` | `int` | `256` |  |" in page
    assert "| `undocumented` | `str \\| None` | `null` |  |" in page
    assert "{ #inner }" in page and "(#inner)" in page


def test_videorl_keys_explains_a_section_from_the_docstrings(capsys, monkeypatch):
    from tests.cli_runner import run_cli

    result = run_cli(capsys, monkeypatch, "keys", "algorithm.pruning")
    assert result.code == 0
    listed = [line.split(":")[0] for line in result.lines if not line.startswith(" ")]
    expected = [f.key for f in all_fields() if f"{f.key}.".startswith("algorithm.pruning.")]
    assert listed == expected and "algorithm.pruning.prune_ratio" in listed
    ratio = next(f for f in all_fields() if f.key == "algorithm.pruning.prune_ratio")
    at = result.lines.index(f"algorithm.pruning.prune_ratio: float = {ratio.default}")
    assert " ".join(result.lines[at + 1].split()) in " ".join(ratio.description.split())


def test_videorl_keys_unknown_key_is_one_line_naming_the_sections(capsys, monkeypatch):
    from tests.cli_runner import run_cli

    result = run_cli(capsys, monkeypatch, "keys", "rollout.nn")
    assert result.code == 2 and len(result.lines) == 1
    assert "'rollout.nn'" in result.output and "rollout" in result.output.split("sections are")[1]
