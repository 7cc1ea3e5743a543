"""Ranges and choices declared once, beside a config field, and checked when its section is
built (by the loader or directly in code):

    n: Annotated[int, Gt(0)] = 8
    top_p: Annotated[float, Between(0, 1, low_open=True)] = 1.0
    vllm_sleep_level: Annotated[int, OneOf(0, 1, 2)] = 0

A section derives from `Checked`, whose `__post_init__` walks its fields: each declared
constraint (applied to every item of a tuple or list, skipped for None) and each plain
`Literal[...]` type (the loader checks those too; this covers a section built in code). A
violation is one line, `key=value must be <rule>`; the generated reference (docs/config.md,
`videorl keys`) shows the same rule (`constraint_text`).
"""

from __future__ import annotations

import math
import types
import typing
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Literal, Union

from videorl.errors import ConfigError


# eq=False: typing caches `Annotated[float, c]` by equal metadata, and Between(0, 1) == Between(0.0,
# 1.0) would then render as the other's bounds.
@dataclass(frozen=True, eq=False)
class Range:
    """A finite number with optional bounds: `ge` / `gt` below, `le` / `lt` above; `shown`
    replaces the rendered rule (`an integer in [0, 2**63 - 1]`)."""

    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None
    shown: str | None = None

    def admits(self, value: Any) -> bool:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        if not math.isfinite(value):
            return False
        return not (
            (self.ge is not None and value < self.ge)
            or (self.gt is not None and value <= self.gt)
            or (self.le is not None and value > self.le)
            or (self.lt is not None and value >= self.lt)
        )

    def rule(self, pretty: bool = False) -> str:
        """`> 0`, `>= 1`, `in [0, 1]`, `in (0, 1]` (`≥ 1` with `pretty`)."""
        if self.shown is not None:
            return self.shown
        low = _bound(self.ge if self.ge is not None else self.gt, pretty)
        high = _bound(self.le if self.le is not None else self.lt, pretty)
        if low is not None and high is not None:
            opening = "[" if self.ge is not None else "("
            closing = "]" if self.le is not None else ")"
            return f"in {opening}{low}, {high}{closing}"
        ge, le = ("≥", "≤") if pretty else (">=", "<=")
        if low is not None:
            return f"{ge} {low}" if self.ge is not None else f"> {low}"
        if high is not None:
            return f"{le} {high}" if self.le is not None else f"< {high}"
        return "a finite number"

    def wanted(self) -> str:
        """The rule as what to set: `a number >= 0`, `a finite number`."""
        bounded = (self.ge, self.gt, self.le, self.lt) != (None,) * 4
        return f"a number {self.rule()}" if bounded and self.shown is None else self.rule()


def _bound(value: float | None, pretty: bool) -> str | None:
    """A bound as written (a message shows `0.0` for a float bound, the reference `0`)."""
    if value is None:
        return None
    return f"{value:g}" if pretty and isinstance(value, float) else str(value)


def Ge(bound: float) -> Range:
    """value >= bound."""
    return Range(ge=bound)


def Gt(bound: float) -> Range:
    """value > bound."""
    return Range(gt=bound)


def Between(low: float, high: float, *, low_open: bool = False, high_open: bool = False) -> Range:
    """low <= value <= high; `low_open` / `high_open` make that end strict."""
    return Range(
        ge=None if low_open else low,
        gt=low if low_open else None,
        le=None if high_open else high,
        lt=high if high_open else None,
    )


@dataclass(frozen=True, eq=False)
class OneOf:
    """One of the listed values (a field whose type cannot be a `Literal`)."""

    choices: tuple[Any, ...]

    def __init__(self, *choices: Any) -> None:
        object.__setattr__(self, "choices", choices)

    def admits(self, value: Any) -> bool:
        return any(value == c and type(value) is type(c) for c in self.choices)

    def rule(self, pretty: bool = False) -> str:  # noqa: ARG002 - Constraint.rule's signature
        """`hf or vllm`, `0, 1 or 2`."""
        names = [str(c) for c in self.choices]
        return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"

    def wanted(self) -> str:
        return self.rule()


Constraint = Range | OneOf  # what `Annotated[type, ...]` declares


def _literal(hint: Any) -> OneOf | None:
    """The choices of a `Literal[...]` or `Literal[...] | None` type, else None."""
    if typing.get_origin(hint) in (Union, types.UnionType):
        members = [a for a in typing.get_args(hint) if a is not type(None)]
        return _literal(members[0]) if len(members) == 1 else None
    return OneOf(*typing.get_args(hint)) if typing.get_origin(hint) is Literal else None


def declared(hint: Any) -> list[Constraint]:
    """The constraints of one field's type hint (extras included)."""
    found = [m for m in getattr(hint, "__metadata__", ()) if isinstance(m, (Range, OneOf))]
    base = typing.get_args(hint)[0] if found else hint
    choices = _literal(base)
    return found + ([choices] if choices is not None else [])


_TABLES: dict[type, dict[str, list[Constraint]]] = {}


def field_constraints(cls: type) -> dict[str, list[Constraint]]:
    """Field name -> its constraints, for a dataclass `cls` (read once per class)."""
    if cls not in _TABLES:
        hints = typing.get_type_hints(cls, include_extras=True)
        table = {f.name: declared(hints[f.name]) for f in fields(cls)}
        _TABLES[cls] = {name: found for name, found in table.items() if found}
    return _TABLES[cls]


def constraint_text(hint: Any, pretty: bool = True) -> str:
    """The rule of a field's declared ranges (`≥ 1`, `in (0, 1]`), "" without any; the
    reference lists the choices (`Literal`, `OneOf`) itself."""
    ranges = [c for c in getattr(hint, "__metadata__", ()) if isinstance(c, Range)]
    return " and ".join(c.rule(pretty) for c in ranges)


class Checked:
    """A config section that checks its declared constraints when built. `section` names
    its path for messages (`trainer` -> `trainer.steps=0 ...`); without one, keys are
    relative and the loader puts the section's path in front."""

    section: ClassVar[str] = ""
    orders: ClassVar[tuple[Ordered, ...]] = ()  # joint bounds: low field <= high field

    def __init_subclass__(cls, section: str = "", **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if section:
            cls.section = section

    def __post_init__(self) -> None:
        check_constraints(self)
        for order in self.orders:
            order.check(self)

    @classmethod
    def refusal(cls, key: str, value: Any, constraint: Constraint) -> str:
        """The one line for a value that `constraint` refuses."""
        return f"{key}={value!r} must be {constraint.rule()}"


def check_constraints(section: Checked) -> None:
    """Raise a one-line `ConfigError` for the first field value its constraints refuse."""
    cls = type(section)
    prefix = f"{cls.section}." if cls.section else ""
    for name, constraints in field_constraints(cls).items():
        value = getattr(section, name)
        if value is None:
            continue
        items = enumerate(value) if isinstance(value, (tuple, list)) else [(None, value)]
        for index, item in items:
            for constraint in constraints:
                if not constraint.admits(item):
                    key = f"{prefix}{name}" + ("" if index is None else f"[{index}]")
                    raise ConfigError(cls.refusal(key, item, constraint))


@dataclass(frozen=True)
class Ordered:
    """A section's joint bound, declared in its `orders`: field `low` <= field `high`;
    `rule` ends the message (the bounds both must keep, the defaults)."""

    low: str
    high: str
    rule: str

    def check(self, section: object) -> None:
        lo, hi = getattr(section, self.low), getattr(section, self.high)
        if lo > hi:
            raise ConfigError(f"{self.low}={lo} and {self.high}={hi} need {self.rule}")
