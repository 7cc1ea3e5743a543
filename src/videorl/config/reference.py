"""The configuration reference (docs/config.md), generated from the config dataclasses.

Walks `Config` recursively and reads, for every field: its type as written, its default
(a `default_factory` called), the choices of a `Literal[...]` type (or a declared `OneOf`),
its declared range (`Annotated[int, Ge(1)]`: "≥ 1", config/constraints.py), and its description:
its attribute docstring (the string literal right after the field), the one way a config
field is documented. Regenerate the page with

    python -m videorl.config.reference > docs/config.md

and `videorl keys [SECTION]` prints the same descriptions in a terminal.

`tests/config/test_reference.py` fails when a field has no docstring or the page is stale.
The docs tooling and `videorl keys` (cli/info.py) import this module; the config and the
runtime never do.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import json
import sys
import textwrap
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from videorl.config.constraints import OneOf, constraint_text
from videorl.config.schema import Config


@dataclass(frozen=True)
class FieldDoc:
    """One key of the config."""

    key: str  # dotted: `algorithm.pruning.prune_ratio`
    type: str  # the annotation as written in the source
    default: str  # rendered as YAML/JSON (`null`, `true`, `"sdpa"`); "" for a nested group
    choices: tuple[Any, ...]  # the values of a `Literal[...]` in the type, else ()
    other_types: tuple[str, ...]  # beside the choices, the union's other types (`bool`)
    description: str  # one line: the docstring, then the declared range; "" when neither
    group: str | None = None  # the nested group's key when the field is a config section
    rule: str = ""  # the declared range (`≥ 1`, `in (0, 1]`), "" when none


@dataclass(frozen=True)
class GroupDoc:
    """One config section (a dataclass) and its own (non-section) keys."""

    key: str  # `model`, `algorithm.pruning`
    cls: type
    summary: str  # the first paragraph of the class docstring, on one line
    doc: str  # the whole class docstring
    fields: tuple[FieldDoc, ...]


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _class_node(cls: type) -> ast.ClassDef:
    source = textwrap.dedent(inspect.getsource(cls))
    return next(n for n in ast.parse(source).body if isinstance(n, ast.ClassDef))


def _attribute_docstring(body: list[ast.stmt], index: int) -> str:
    """The string literal right after statement `index`, on one line ("" when there is none)."""
    following = body[index + 1] if index + 1 < len(body) else None
    if (
        isinstance(following, ast.Expr)
        and isinstance(following.value, ast.Constant)
        and isinstance(following.value.value, str)
    ):
        return _one_line(inspect.cleandoc(following.value.value))
    return ""


def _written_type(annotation: ast.expr) -> str:
    """The annotation as written, without an `Annotated[...]` wrapper (its constraints are
    rendered apart)."""
    if (
        isinstance(annotation, ast.Subscript)
        and isinstance(annotation.value, ast.Name)
        and annotation.value.id == "Annotated"
        and isinstance(annotation.slice, ast.Tuple)
    ):
        return ast.unparse(annotation.slice.elts[0])
    return ast.unparse(annotation)


def field_sources(cls: type) -> dict[str, tuple[str, str]]:
    """Field name -> (annotation as written, attribute docstring) for the fields `cls`
    declares (not those it inherits)."""
    node = _class_node(cls)
    found: dict[str, tuple[str, str]] = {}
    for index, statement in enumerate(node.body):
        if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            annotation = _written_type(statement.annotation)
            found[statement.target.id] = (annotation, _attribute_docstring(node.body, index))
    return found


def default_expressions(cls: type) -> dict[str, str]:
    """Field name -> its default as written, for defaults the source computes
    (`128 * 28 * 28`, `int(...)`), not for literals, names or `field(...)`."""
    node = _class_node(cls)
    found: dict[str, str] = {}
    for statement in node.body:
        if not (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)):
            continue
        value = statement.value
        if isinstance(value, ast.BinOp) or (
            isinstance(value, ast.Call)
            and not (isinstance(value.func, ast.Name) and value.func.id == "field")
        ):
            found[statement.target.id] = ast.unparse(value)
    return found


def _literal_choices(hint: Any) -> tuple[Any, ...]:
    if typing.get_origin(hint) is Literal:
        return typing.get_args(hint)
    return tuple(choice for arg in typing.get_args(hint) for choice in _literal_choices(arg))


def _choices(extras: Any, hint: Any) -> tuple[Any, ...]:
    """A declared `OneOf`'s values, else those of the `Literal[...]` in the type `hint`."""
    declared = [c for c in getattr(extras, "__metadata__", ()) if isinstance(c, OneOf)]
    return declared[0].choices if declared else _literal_choices(hint)


def _other_types(hint: Any) -> tuple[str, ...]:
    """The members of a union beside its `Literal[...]` ones (`Literal["auto"] | bool`: bool)."""
    if typing.get_origin(hint) is Literal:
        return ()
    args = typing.get_args(hint)
    if not any(typing.get_origin(arg) is Literal for arg in args):
        return ()
    others = [arg for arg in args if typing.get_origin(arg) is not Literal]
    return tuple(
        "null" if arg is type(None) else getattr(arg, "__name__", str(arg)) for arg in others
    )


def _nested(hint: Any) -> type | None:
    return hint if isinstance(hint, type) and dataclasses.is_dataclass(hint) else None


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def render_value(value: Any) -> str:
    """A default as it would be written in a YAML recipe (JSON flow style)."""
    if value is dataclasses.MISSING:
        return "(required)"
    try:
        return json.dumps(value, ensure_ascii=False)
    except TypeError:
        return repr(value)


def _docstring(cls: type) -> str:
    doc = inspect.getdoc(cls) or ""
    return "" if doc.startswith(f"{cls.__name__}(") else doc  # dataclasses' generated one


def _summary(cls: type) -> str:
    return _one_line(_docstring(cls).split("\n\n")[0])


def walk(cls: type = Config, prefix: str = "") -> Iterator[GroupDoc]:
    """The config sections, depth first in declaration order; the top level (`Config`)
    itself is the group with key ""."""
    hints = typing.get_type_hints(cls)
    extras = typing.get_type_hints(cls, include_extras=True)
    sources: dict[str, tuple[str, str]] = {}
    expressions: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if dataclasses.is_dataclass(klass):
            sources.update(field_sources(klass))
            expressions.update(default_expressions(klass))
    rows: list[FieldDoc] = []
    children: list[tuple[type, str]] = []
    for f in dataclasses.fields(cls):
        key = f"{prefix}{f.name}"
        annotation, description = sources.get(f.name, (str(f.type), ""))
        nested = _nested(hints[f.name])
        if nested is not None:
            children.append((nested, key))
            summary = description or _summary(nested)
            rows.append(FieldDoc(key, annotation, "", (), (), summary, group=key))
            continue
        hint = hints[f.name]
        default = render_value(_default(f))
        if f.name in expressions:
            default = f"{default} = {expressions[f.name]}"
        choices, others = _choices(extras[f.name], hint), _other_types(hint)
        rule = constraint_text(extras[f.name])
        if rule:
            description = f"{description.rstrip('.')}. Range: {rule}.".lstrip(". ")
        rows.append(FieldDoc(key, annotation, default, choices, others, description, rule=rule))
    doc = _docstring(cls)
    yield GroupDoc(prefix.rstrip("."), cls, _one_line(doc.split("\n\n")[0]), doc, tuple(rows))
    for nested, key in children:
        yield from walk(nested, f"{key}.")


def all_fields(cls: type = Config) -> list[FieldDoc]:
    """Every key of the config, sections included (`model`, `model.lora`, ...)."""
    return [row for group in walk(cls) for row in group.fields]


def _anchor(key: str) -> str:
    return key.replace(".", "-").replace("_", "-")


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _code(text: str) -> str:
    return f"`{_cell(text)}`" if text else ""


def meaning(row: FieldDoc, markdown: bool = True) -> str:
    """The description, then the choices and the section it opens (a link in Markdown)."""
    quote = "`" if markdown else ""
    text = row.description
    if row.choices:
        values = ", ".join(f"{quote}{render_value(c).strip(chr(34))}{quote}" for c in row.choices)
        if row.other_types:
            values += f"; or {' / '.join(f'{quote}{t}{quote}' for t in row.other_types)}"
        text = f"{text} One of: {values}."
    if row.group is not None:
        section = f"`{row.group}`"
        link = f"[Section {section}](#{_anchor(row.group)})" if markdown else f"See {row.group}"
        text = f"{text} {link}."
    return _cell(text.strip()) if markdown else text.strip()


HEADER = """# Configuration reference

<!-- Generated by `python -m videorl.config.reference > docs/config.md`; do not edit.
The descriptions are the attribute docstrings of the fields in src/videorl/config/ and the
section modules it imports; tests/config/test_reference.py fails when this page is stale. -->

Every key a recipe YAML (or a `key.sub=value` override on the command line) can set, with
its type as written in the code, its default and what it means. A recipe sets only what
differs from these defaults; `videorl train RECIPE --dry-run` prints the resolved config,
and `videorl keys SECTION` prints this page's entries for a section in a terminal.
Each section checks its values when the config loads (ranges, choices, combinations
across sections), so a bad value is one line and exit code 2.
"""


def render(cls: type = Config) -> str:
    """The Markdown page."""
    parts = [HEADER]
    for group in walk(cls):
        if not group.key:
            parts.append("## Sections\n")
        else:
            level = "#" * (group.key.count(".") + 2)
            parts.append(f"{level} `{group.key}` {{ #{_anchor(group.key)} }}\n")
        if group.doc:
            parts.append(f"{group.doc}\n")
        lines = ["| key | type | default | meaning |", "|---|---|---|---|"]
        for row in group.fields:
            lines.append(
                f"| `{row.key}` | {_code(row.type)} | {_code(row.default)} | {meaning(row)} |"
            )
        parts.append("\n".join(lines) + "\n")
    return "\n".join(parts)


def key_table(cls: type = Config) -> dict[str, list[str]]:
    """Section -> its keys, what `videorl.config.keys` checks before the config loads."""
    return {group.key: [row.key.rsplit(".", 1)[-1] for row in group.fields] for group in walk(cls)}


def main() -> None:
    """The Markdown page on stdout; with `--keys`, `config/keys.json`'s text instead."""
    if sys.argv[1:] == ["--keys"]:
        sys.stdout.write(json.dumps(key_table(), indent=1) + "\n")
        return
    sys.stdout.write(render())


if __name__ == "__main__":
    main()
