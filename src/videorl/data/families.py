"""Task families (docs/tasks.md): their names and the registry of what each one declares.

A family is one module under `videorl/tasks/` that registers a `TaskFamily`: its answer
type, prompt templates, reward, evaluation scorer and summary, synthetic generator and demo
rendering, as real callables. This bottom-layer table knows no family: `TASKS` imports the
built-in modules on first lookup, so data, rewards, eval and demo reach a family's parts
without importing upward. A module of the user's (a test's) registers more with
`register_family`.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

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


class _Families(type):
    """`for f in Family`, `len(Family)`: the registered families (`families()`);
    `Family("math")`: the one instance of a name."""

    _named: dict[str, Family]

    def __iter__(cls) -> Iterator[Family]:
        return iter(families())

    def __len__(cls) -> int:
        return len(families())

    def __call__(cls, name: str) -> Family:
        if name not in cls._named:
            raise ValueError(f"{name!r} is not a registered task family")
        return cls._named[name]


class Family(str, metaclass=_Families):
    """A task family's canonical name, one instance per name (compare with `is`); its
    parts are `family.task` (the registered `TaskFamily`)."""

    _named: ClassVar[dict[str, Family]] = {}
    TEMPORAL_GROUNDING: ClassVar[Family]
    SPATIAL_GROUNDING: ClassVar[Family]
    SEGMENTATION: ClassVar[Family]
    TRACKING: ClassVar[Family]
    SPATIO_TEMPORAL_GROUNDING: ClassVar[Family]
    VIDEO_QA: ClassVar[Family]
    SPATIAL_INTELLIGENCE: ClassVar[Family]
    MATH: ClassVar[Family]

    @classmethod
    def named(cls, name: str) -> Family:
        """The family called `name`, created on first use."""
        if name not in cls._named:
            cls._named[name] = str.__new__(cls, name)
        return cls._named[name]

    def __reduce__(self) -> tuple[Any, ...]:
        return (Family, (self.value,))  # unpickled (reward workers) as the same instance

    def __repr__(self) -> str:
        return f"Family.{self.value.upper()}"

    def __str__(self) -> str:
        return repr(self)

    def __format__(self, spec: str) -> str:
        return format(repr(self), spec)

    @property
    def value(self) -> str:
        return str.__str__(self)

    @property
    def task(self) -> TaskFamily:
        return TASKS.lookup(self.value)

    @property
    def short(self) -> str:
        return self.task.short

    @property
    def uses_video(self) -> bool:
        return self.task.uses_video


for _name in BUILTIN_FAMILIES:
    setattr(Family, _name.upper(), Family.named(_name))


@dataclass(frozen=True)
class DemoParts:
    """What the web demo needs of a family (`demo/`): `label` ("temporal grounding"),
    `placeholder` (the query box's hint), `expected` (the answer format named when a reply
    does not parse), `options` (the question takes options), `blank(question, meta)` (the
    answer fields of a typed question: a placeholder answer and extra record fields),
    `parse(text, options)` (the `Prediction` fields read from a reply) and `view(result)`
    (answer text, truth text, pictures)."""

    label: str
    placeholder: str
    expected: str
    blank: Callable[..., tuple[Any, dict[str, Any]]]
    parse: Callable[..., dict[str, Any]]
    view: Callable[..., tuple[str, str, Any]]
    options: bool = False


@dataclass(frozen=True)
class TaskFamily:
    """What one family declares. Signatures (the types live in the layers above):

    answer(data, where) -> the typed answer from its JSON form (`TaskRecord.answer`, whose
        `to_dict()` writes it back)
    cell_answer(raw, options, where) -> the answer from a dataset cell (a value, JSON text
        or object; `data/columns.py`); None: only the JSON object form
    prompt(record) -> videorl's task instruction; `published`: style -> (record -> text or
        None), the published templates (`data/published_prompts.py`)
    reward(record, payload, config) -> {"task": ..., extras}; serialize(record) -> the
        payload of a perfect answer; protocol: the `rewards.protocol.Protocol` placing it
    orarl_reward(record, response) -> (format, components) under `reward.mode: orarl`
    eval_score(record, text) -> (prediction, values incl. "score"); summary(samples) ->
        benchmark metrics; `sample_metric`: the per-sample value the report's histogram
        plots (None: no histogram); `blind(train, val)` -> the best prompt-only answer's scores
    synth(draw) -> a synthetic record (`data/synth.py: SynthDraw`)
    demo: the web demo's parts (None: the demo does not ask this family)
    time_windows: answers are windows of the video's time (`TemporalAnswer`): TaRO's
        sensitivity reward applies, eval breaks scores down by video length and draws
        timelines, a dataset row's query may be read out of its instruction
    subtype_groups: the record's subtype is its OraRL task group when the row has no
        `problem_type` (spatial intelligence's question types)
    video_r1_types: the Video-R1 `problem_type` values whose rows are this family
    """

    name: str
    short: str
    answer: Callable[[Any, str], Any]
    prompt: Callable[[Any], str]
    reward: Callable[[Any, str, Any], dict[str, float]]
    serialize: Callable[[Any], str]
    eval_score: Callable[[Any, str], tuple[Any, dict[str, float]]]
    summary: Callable[[Any], dict[str, float]]
    synth: Callable[[Any], Any]
    protocol: Any = None
    aliases: tuple[str, ...] = ()
    uses_video: bool = True
    cell_answer: Callable[[Any, tuple[str, ...], str], Any] | None = None
    published: dict[str, Callable[[Any], str | None]] = field(default_factory=dict)
    orarl_reward: Callable[[Any, str], tuple[float, dict[str, float]]] | None = None
    sample_metric: str | None = None
    blind: Callable[[Any, Any], dict[str, Any]] | None = None
    demo: DemoParts | None = None
    time_windows: bool = False
    subtype_groups: bool = False
    video_r1_types: tuple[str, ...] = ()


TASKS: Registry[TaskFamily] = Registry(
    "task family", "data.families", tuple(f"videorl.tasks.{name}" for name in BUILTIN_FAMILIES)
)


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
    return Family.named(task.name)


def families() -> tuple[Family, ...]:
    """Every registered family, the built-ins first in their canonical order."""
    TASKS.names()
    return tuple(f for f in Family._named.values() if f.value in TASKS)


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
