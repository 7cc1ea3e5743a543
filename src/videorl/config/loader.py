"""Build a frozen-dataclass config tree from YAML and dotted `key.sub=value` overrides.

OmegaConf merges the YAML file with the overrides (so `${...}` interpolation works); this
module then checks every key and value against the dataclass type hints. Each error is one
line that names the key, the bad value and the valid keys or allowed values.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
import types
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, Union, cast

from videorl.errors import ConfigError

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

T = TypeVar("T", bound="DataclassInstance")


def _closest(key: str, valid: Sequence[str]) -> str:
    close = difflib.get_close_matches(key, list(valid), n=3, cutoff=0.5)
    return f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""


def _type_name(hint: Any) -> str:
    origin = typing.get_origin(hint)
    if origin is Literal:
        return " | ".join(repr(a) for a in typing.get_args(hint))
    if origin in (Union, types.UnionType):
        return " | ".join(_type_name(a) for a in typing.get_args(hint))
    if hint is type(None):
        return "null"
    return getattr(hint, "__name__", str(hint))


def _coerce(hint: Any, value: Any, key: str) -> Any:
    """`value` as the field type `hint`, recursively (unions, literals, sections, lists,
    tuples, mappings, scalars); a mismatch is a one-line error naming `key`."""
    origin = typing.get_origin(hint)
    if hint is Any:
        return value
    if origin in (Union, types.UnionType):
        return _coerce_union(hint, value, key)
    if origin is Literal:
        args = typing.get_args(hint)
        if value not in args:
            raise ConfigError(
                f"config key {key!r} = {value!r} is not allowed; allowed values: {', '.join(repr(a) for a in args)}"
            )
        return value
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):  # a section's class
        if not isinstance(value, dict):
            raise ConfigError(f"config key {key!r} must be a section (mapping), got {value!r}")
        return build(hint, value, prefix=f"{key}.")
    if origin in (tuple, list):
        return _coerce_sequence(hint, value, key)
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(
                f"config key {key!r} = {value!r} has the wrong type: expected a mapping"
            )
        args = typing.get_args(hint)
        value_hint = args[1] if args else Any
        return {str(k): _coerce(value_hint, v, f"{key}.{k}") for k, v in value.items()}
    return _coerce_scalar(hint, value, key)


def _wrong_type(hint: Any, value: Any, key: str) -> ConfigError:
    return ConfigError(
        f"config key {key!r} = {value!r} has the wrong type: expected {_type_name(hint)}"
    )


def _coerce_union(hint: Any, value: Any, key: str) -> Any:
    """The first member type `value` coerces to (a mapping goes to the one section type, for
    its more precise error); None where the union allows it."""
    args = typing.get_args(hint)
    if value is None and type(None) in args:
        return None
    options = [a for a in args if a is not type(None)]
    sections = [a for a in options if dataclasses.is_dataclass(a)]
    if isinstance(value, dict) and len(sections) == 1:
        return _coerce(sections[0], value, key)  # its own, more precise error
    for option in options:
        try:
            return _coerce(option, value, key)
        except ConfigError:
            continue
    raise _wrong_type(hint, value, key)


def _coerce_sequence(hint: Any, value: Any, key: str) -> list[Any] | tuple[Any, ...]:
    """A list or tuple item by item; a fixed-length tuple needs exactly its items."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if not isinstance(value, (list, tuple)):
        raise ConfigError(f"config key {key!r} = {value!r} has the wrong type: expected a list")
    if origin is tuple and args and args[-1] is not Ellipsis:
        if len(args) != len(value):
            raise ConfigError(f"config key {key!r} = {value!r} must have {len(args)} items")
        return tuple(
            _coerce(a, v, f"{key}[{i}]") for i, (a, v) in enumerate(zip(args, value, strict=True))
        )
    item = args[0] if args else Any
    items = [_coerce(item, v, f"{key}[{i}]") for i, v in enumerate(value)]
    return tuple(items) if origin is tuple else items


def _coerce_scalar(hint: Any, value: Any, key: str) -> Any:
    """bool, int, float (finite; an int widens), str (a number is written out) or any other
    class by isinstance; YAML's booleans are never numbers."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is bool and isinstance(value, bool):
        return value
    if hint is int and number and isinstance(value, int):
        return value
    if hint is float and number:
        if not math.isfinite(value):
            raise ConfigError(f"config key {key!r} = {value!r} must be a finite number")
        return float(value)
    if hint is str and (isinstance(value, str) or number):
        return value if isinstance(value, str) else str(value)
    if hint not in (bool, int, float, str) and isinstance(value, hint):
        return value
    raise _wrong_type(hint, value, key)


def build(cls: type[T], data: dict[str, Any] | None, prefix: str = "") -> T:
    """Instantiate dataclass `cls` from a nested dict, checking keys, types and values."""
    data = data or {}
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls) if f.init]
    kwargs = {}
    for key, value in data.items():
        if key not in names:
            raise unknown_key(key, names, prefix)
        kwargs[key] = _coerce(hints[key], value, f"{prefix}{key}")
    try:
        return cls(**kwargs)
    except ConfigError as err:
        raise ConfigError(in_section(str(err), prefix.rstrip("."), names)) from None


def unknown_key(key: str, names: Sequence[str], prefix: str = "") -> ConfigError:
    """The one line for a key that section `prefix` (valid `names`) does not have."""
    return ConfigError(
        f"config key {prefix + key!r} is unknown; {_closest(key, names)}"
        f"(valid keys{' in ' + prefix.rstrip('.') if prefix else ''}: {', '.join(names)})"
    )


def in_section(message: str, where: str, keys: Sequence[str]) -> str:
    """A section's own error, placed in the config: one that begins with one of the
    section's `keys` (`topk=-1 must be >= 0`, `plugins: ...`) gets the section's path in
    front (`algorithm.distill.topk=-1 must be >= 0`), any other gets `where: `. The
    sections name their keys relative to themselves and leave the path to the loader; a
    message that already starts with the path is kept as it is."""
    if not where or message.startswith(where):
        return message
    head = re.match(r"\w+", message)
    if head and head.group() in keys and message[head.end() : head.end() + 1] in "=.[:":
        return f"{where}.{message}"
    return f"{where}: {message}"


def to_dict(config: Any) -> dict[str, Any]:
    """Plain nested dict of a dataclass tree (tuples as lists), for YAML and logs."""

    def convert(value: Any) -> Any:
        if dataclasses.is_dataclass(value):
            return {f.name: convert(getattr(value, f.name)) for f in dataclasses.fields(value)}
        if isinstance(value, (list, tuple)):
            return [convert(v) for v in value]
        if isinstance(value, dict):
            return {k: convert(v) for k, v in value.items()}
        return value

    return convert(config)


def merge_sources(path: str | Path | None, overrides: Sequence[str] = ()) -> dict[str, Any]:
    """YAML file merged with dotted overrides (`rollout.n=4`), interpolations resolved."""
    import yaml
    from omegaconf import DictConfig, OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    base = OmegaConf.create({})
    if path is not None:
        file = Path(path)
        if not file.is_file():
            raise ConfigError(
                f"config file {str(path)!r} not found; pass a YAML path such as configs/quickstart.yaml"
            )
        try:
            loaded = OmegaConf.load(file)
        except (yaml.YAMLError, OSError, ValueError) as err:
            raise yaml_error(file, err) from None
        if not isinstance(loaded, DictConfig):
            raise ConfigError(
                f"config file {str(path)!r} holds a {type(loaded).__name__.removesuffix('Config').lower()} "
                "at the top level; a recipe is a mapping of sections (model:, data:, rollout:, ...)"
            )
        base = loaded
    for item in overrides:
        if "=" not in item or item.startswith("="):
            raise ConfigError(f"override {item!r} must look like key.sub=value (e.g. rollout.n=4)")
    dotted = []
    for item in overrides:
        try:
            dotted.append(OmegaConf.from_dotlist([item]))
        except (yaml.YAMLError, OmegaConfBaseException) as err:
            problem = getattr(err, "problem", None) or str(err).splitlines()[0]
            raise ConfigError(
                f"override {item!r}: the value is not valid YAML ({problem}); "
                "quote it or close its brackets"
            ) from None
    try:
        merged = OmegaConf.merge(base, *dotted)
        # base is a mapping (DictConfig), so the merge is one and its container a dict
        return cast(dict[str, Any], OmegaConf.to_container(merged, resolve=True))
    except OmegaConfBaseException as err:
        raise ConfigError(f"cannot merge config overrides: {str(err).splitlines()[0]}") from None


def yaml_error(path: str | Path, err: Exception, what: str = "config file") -> ConfigError:
    """One line for an unreadable YAML file: its name, the line and column, the problem."""
    import yaml

    where = f"{what} {str(path)!r}"
    if isinstance(err, UnicodeDecodeError):
        return not_utf8(where, Path(path).read_bytes())
    if isinstance(err, yaml.MarkedYAMLError) and err.problem_mark is not None:
        mark = err.problem_mark
        context = (
            f" ({err.context} at line {err.context_mark.line + 1})"
            if (err.context and err.context_mark is not None)
            else ""
        )
        return ConfigError(
            f"{where} line {mark.line + 1}, column {mark.column + 1}: {err.problem}{context}; "
            "fix the YAML syntax there"
        )
    return ConfigError(f"{where} is not readable YAML: {' '.join(str(err).split())}")


def not_utf8(where: str, data: bytes) -> ConfigError:
    """`where` line L, column C: the first byte of `data` that is not UTF-8."""
    try:
        data.decode("utf-8")
        return ConfigError(f"{where} is not UTF-8 text; save the file as UTF-8")
    except UnicodeDecodeError as err:
        before = data[: err.start]
        line, column = before.count(b"\n") + 1, err.start - before.rfind(b"\n")
        return ConfigError(
            f"{where} line {line}, column {column}: not UTF-8 text "
            f"(byte 0x{data[err.start]:02x}); save the file as UTF-8"
        )
