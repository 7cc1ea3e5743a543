"""Task families (docs/tasks.md): their names and the registry of what each one declares.

A family is one package under `videorl/tasks/`. Its `__init__` registers a `TaskFamily`,
what reading and prompting a record needs (names, answer parser, prompt templates, flags);
its submodules register the heavier parts into the table of the layer that uses them
(`reward` -> `rewards.registry.FAMILY_REWARDS`, `evaluation` -> `eval.scoring.FAMILY_EVALS`,
`synth` -> `data.synth_tasks.FAMILY_SYNTHS`, `demo` -> `demo.views.FAMILY_DEMOS`), imported
when a table is first asked for that family (`PartTable`). This bottom-layer table knows no
family: `TASKS` imports the built-in packages on first lookup, so reading a record imports
no reward or evaluation code. A module of the user's (a test's) registers more with
`register_family` and the tables' `register`.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from videorl.errors import ConfigError
from videorl.registry import Registry

# The built-in families in their canonical order (synth seeds and report order use it).
BUILTIN_FAMILIES = (
    "temporal_grounding",
    "spatial_grounding",
    "segmentation",
    "tracking",
    "spatio_temporal_grounding",
    "video_qa",
    "spatial_intelligence",
    "math",
)

# Spatial-intelligence subtypes and their answer kind (docs/methods.md#answer-protocol).
SI_NUMERIC_SUBTYPES = ("abs_distance", "object_counting", "object_size", "room_size")
SI_CHOICE_SUBTYPES = ("rel_distance", "route_planning", "appearance_order", "rel_direction")


@dataclass(frozen=True)
class Family:
    """A task family's canonical name (`Family("math")`; equal by name, so it pickles to
    reward workers as a plain value); its declaration is `family.task`."""

    value: str

    @property
    def task(self) -> TaskFamily:
        return TASKS.lookup(self.value)

    @property
    def short(self) -> str:
        return self.task.short

    @property
    def uses_video(self) -> bool:
        return self.task.uses_video


class Answer(Protocol):
    """A typed ground truth (`data/records.py`): written back by `to_dict()`."""

    def to_dict(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class TaskFamily:
    """What one family declares for reading and prompting its records:

    answer(data, where) -> the typed answer from its JSON form (`TaskRecord.answer`, whose
        `to_dict()` writes it back; an answer class's `from_dict`)
    cell_answer(raw, options, where) -> the answer from a dataset cell (a value, JSON text
        or object; `data/columns.py`); None: only the JSON object form
    prompt(record) -> videorl's task instruction; `published`: style -> (record -> text or
        None), the published templates (`tasks/<family>/prompts.py`)
    package: the module whose submodules (`reward`, `evaluation`, `synth`, `demo`) register
        the family's other parts when first asked (`PartTable`); "" registers them itself
    time_windows: answers are windows of the video's time (`TemporalAnswer`): TaRO's
        sensitivity reward applies, eval breaks scores down by video length and draws
        timelines, a dataset row's query may be read out of its instruction
    subtype_groups: the record's subtype is its OraRL task group when the row has no
        `problem_type` (spatial intelligence's question types)
    video_r1_types: the Video-R1 `problem_type` values whose rows are this family

    `prompt` and `published` take a `TaskRecord`, typed `Any` here because
    `data/records.py` imports this module.
    """

    name: str
    short: str
    answer: Callable[[dict[str, Any], str], Answer]
    prompt: Callable[[Any], str]
    package: str = ""
    aliases: tuple[str, ...] = ()
    uses_video: bool = True
    cell_answer: Callable[[Any, tuple[str, ...], str], Answer] | None = None
    published: Mapping[str, Callable[[Any], str | None]] = field(default_factory=dict)
    time_windows: bool = False
    subtype_groups: bool = False
    video_r1_types: tuple[str, ...] = ()


TASKS: Registry[TaskFamily] = Registry(
    "task family", "data.families", tuple(f"videorl.tasks.{name}" for name in BUILTIN_FAMILIES)
)

Part = TypeVar("Part")


class PartTable(Generic[Part]):
    """`family -> part` of one layer (a family's reward, its evaluation, ...): a family's
    entry is registered by its `package`'s submodule `part`, imported on first lookup."""

    def __init__(self, what: str, part: str) -> None:
        self.what, self.part = what, part
        self._entries: dict[str, Part] = {}

    def register(self, family: Family | str, entry: Part) -> None:
        self._entries[family.value if isinstance(family, Family) else family] = entry

    def unregister(self, family: Family) -> None:
        self._entries.pop(family.value, None)

    def get(self, family: Family) -> Part | None:
        """The family's part; None: the family has none (no submodule `part`)."""
        if family.value not in self._entries:
            package = family.task.package
            module = f"{package}.{self.part}"
            if package and importlib.util.find_spec(module) is not None:
                importlib.import_module(module)
        return self._entries.get(family.value)

    def __getitem__(self, family: Family) -> Part:
        entry = self.get(family)
        if entry is None:
            raise ConfigError(f"task family {family.value!r} registers no {self.what}")
        return entry


def register_family(task: TaskFamily) -> Family:
    """Add `task` to the registry (a name or alias that another family holds is refused);
    returns its `Family`."""
    if task.name not in BUILTIN_FAMILIES:
        TASKS.names()
    known = _aliases()
    names = (task.name, task.short, *task.aliases)
    clash = [a for a in names if known.get(a, task.name) != task.name]
    if clash or TASKS.get(task.name, task) != task:
        raise ConfigError(
            f"task family {task.name!r}: {', '.join(clash) or task.name} already names "
            "another family; pick another name"
        )
    TASKS[task.name] = task
    return Family(task.name)


def families() -> tuple[Family, ...]:
    """Every registered family, the built-ins first in their canonical order."""
    TASKS.names()
    others = [name for name in TASKS if name not in BUILTIN_FAMILIES]
    return tuple(Family(n) for n in (*BUILTIN_FAMILIES, *others) if n in TASKS)


def _aliases() -> dict[str, str]:
    found: dict[str, str] = {}
    for task in dict(TASKS).values():
        for alias in (task.name, task.short, *task.aliases):
            found.setdefault(alias, task.name)
    return found


def parse_family(name: str | Family) -> Family:
    """Resolve a family name or alias; an unknown name is a configuration error."""
    if isinstance(name, Family):
        return name
    TASKS.names()
    aliases = _aliases()
    key = str(name).strip().lower().replace("-", "_").replace(" ", "_")
    if key in aliases:
        return Family(aliases[key])
    close = difflib.get_close_matches(key, list(aliases), n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise ConfigError(
        f"unknown task family {name!r}{hint} (valid: {', '.join(f.value for f in families())})"
    )
