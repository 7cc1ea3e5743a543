"""A small JSON-schema validator for tool arguments (the subset tool signatures use).

Supported keywords: `type` (object, array, string, number, integer, boolean, null),
`properties`, `required`, `additionalProperties` (bool), `items`, `minItems`, `maxItems`,
`minimum`, `maximum`, `enum`, `description`, `default`. A schema using any other keyword is
refused when the tool is registered, so no signature is checked only in part.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "minItems",
        "maxItems",
        "minimum",
        "maximum",
        "enum",
        "description",
        "default",
        "title",
    }
)
TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list, tuple),
    "string": (str,),
    "number": (int, float),
    "integer": (int,),
    "boolean": (bool,),
    "null": (type(None),),
}


def object_schema(properties: dict[str, Any], *required: str) -> dict[str, Any]:
    """A tool's `parameters`: an object of `properties`, `required` naming the ones it needs,
    no other fields."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


def seconds(description: str) -> dict[str, Any]:
    """A property that is a time in the video: a number of seconds, 0 or more."""
    return {"type": "number", "minimum": 0, "description": description}


def check_schema(schema: Any, where: str = "schema") -> None:
    """Raise `TypeError` or `ValueError` naming `where` if `schema` uses keywords or types outside the subset."""
    if not isinstance(schema, Mapping):
        raise TypeError(f"{where} must be a mapping, got {type(schema).__name__}")
    unknown = set(schema) - KEYWORDS
    if unknown:
        raise ValueError(f"{where} uses unsupported keywords {sorted(unknown)}")
    kind = schema.get("type")
    if kind is not None and kind not in TYPES:
        raise ValueError(f"{where}.type={kind!r} is not one of {', '.join(TYPES)}")
    for name, sub in (schema.get("properties") or {}).items():
        check_schema(sub, f"{where}.properties.{name}")
    if "items" in schema:
        check_schema(schema["items"], f"{where}.items")
    missing = set(schema.get("required", ())) - set(schema.get("properties") or {})
    if missing:
        raise ValueError(f"{where}.required names undeclared properties {sorted(missing)}")


def _is(value: Any, kind: str) -> bool:
    if isinstance(value, bool) and kind in ("number", "integer"):
        return False  # JSON true is not a number
    if kind == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, TYPES[kind])


def validate(value: Any, schema: Mapping[str, Any], path: str = "arguments") -> str | None:
    """The first way `value` breaks `schema` as a one-line message, or None when it fits."""
    kind = schema.get("type")
    if kind is not None and not _is(value, kind):
        return f"{path} must be {kind}, got {type(value).__name__} {value!r:.40}"
    if "enum" in schema and value not in schema["enum"]:
        return f"{path}={value!r:.40} must be one of {schema['enum']}"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            return f"{path}={value} must be >= {schema['minimum']}"
        if "maximum" in schema and value > schema["maximum"]:
            return f"{path}={value} must be <= {schema['maximum']}"
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        for name in schema.get("required", ()):
            if name not in value:
                return f"{path}.{name} is required"
        if schema.get("additionalProperties") is False:
            extra = sorted(set(value) - set(props))
            if extra:
                return f"{path} has unknown fields {extra}; allowed: {sorted(props)}"
        for name, sub in props.items():
            if name in value and (err := validate(value[name], sub, f"{path}.{name}")):
                return err
    if isinstance(value, (list, tuple)):
        if "minItems" in schema and len(value) < schema["minItems"]:
            return f"{path} must have at least {schema['minItems']} items, got {len(value)}"
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            return f"{path} must have at most {schema['maxItems']} items, got {len(value)}"
        if "items" in schema:
            for i, item in enumerate(value):
                if err := validate(item, schema["items"], f"{path}[{i}]"):
                    return err
    return None


def with_defaults(value: dict[str, Any], schema: Mapping[str, Any]) -> dict[str, Any]:
    """`value` with the schema's top-level property defaults filled in."""
    props = schema.get("properties") or {}
    return {**{k: s["default"] for k, s in props.items() if "default" in s}, **value}
