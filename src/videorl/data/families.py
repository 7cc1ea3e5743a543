"""Task families (docs/methods.md#rewards): their names, aliases and `FamilySpec`s, the one
table saying what each family uses: prompt template, reward (scorer and serializer of a
perfect answer), answer protocol, evaluation scorer and benchmark summary."""

from __future__ import annotations

import difflib
import functools
import importlib
from dataclasses import dataclass
from enum import Enum
from typing import Any

from videorl.errors import ConfigError


# Not a StrEnum (ruff UP042): that would turn str() and format() of a member from
# "Family.MATH" into "math".
class Family(str, Enum):  # noqa: UP042
    """The seven video task families plus text-only math."""

    TEMPORAL_GROUNDING = "temporal_grounding"
    SPATIAL_GROUNDING = "spatial_grounding"
    SEGMENTATION = "segmentation"
    TRACKING = "tracking"
    SPATIO_TEMPORAL_GROUNDING = "spatio_temporal_grounding"
    VIDEO_QA = "video_qa"
    SPATIAL_INTELLIGENCE = "spatial_intelligence"
    MATH = "math"

    @property
    def short(self) -> str:
        return FAMILY_SPECS[self].short

    @property
    def spec(self) -> FamilySpec:
        return FAMILY_SPECS[self]

    @property
    def uses_video(self) -> bool:
        return self is not Family.MATH


@dataclass(frozen=True)
class FamilySpec:
    """What one family declares. Each callable is named `"module:attribute"` and imported
    on first use (`resolve`), so this bottom-layer table can name the prompt (`data`),
    reward (`rewards`) and evaluation (`eval`) functions without importing upward.

    prompt(record) -> str: videorl's task instruction (published styles: `published_prompts`)
    reward: a module with `score(record, payload, config)` and `serialize(record)`
    protocol: the `Protocol` placing the payload in a response
    eval_score(record, text) -> (prediction, values incl. "score")
    summary(samples) -> benchmark metrics
    """

    short: str
    prompt: str
    reward: str
    eval_score: str
    summary: str
    protocol: str = "videorl.rewards.protocol:TAGGED"

    def resolve(self, part: str) -> Any:
        return _resolve(getattr(self, part))


@functools.cache
def _resolve(reference: str) -> Any:
    module, _, attribute = reference.partition(":")
    target = importlib.import_module(module)
    return getattr(target, attribute) if attribute else target


def _spec(short: str, prompt: str, reward: str, scored: str, **kwargs: str) -> FamilySpec:
    return FamilySpec(
        short,
        prompt=f"videorl.data.prompts:{prompt}",
        reward=f"videorl.rewards.{reward}",
        eval_score=f"videorl.eval.scoring:score_{scored}",
        summary=f"videorl.eval.scoring:summarize_{scored}",
        **kwargs,
    )


FAMILY_SPECS: dict[Family, FamilySpec] = {
    Family.TEMPORAL_GROUNDING: _spec("tg", "temporal", "temporal_grounding", "temporal"),
    Family.SPATIAL_GROUNDING: _spec(
        "sg",
        "spatial",
        "spatial_grounding",
        "spatial",
        protocol="videorl.rewards.spatial_grounding:NATIVE_OR_TAGGED",
    ),
    Family.SEGMENTATION: _spec("seg", "segmentation", "segmentation", "segmentation"),
    Family.TRACKING: _spec("trk", "tracking", "tracking", "tracking"),
    Family.SPATIO_TEMPORAL_GROUNDING: _spec(
        "stg", "spatio_temporal", "spatio_temporal_grounding", "spatio_temporal"
    ),
    Family.VIDEO_QA: _spec("qa", "choice_or_number", "video_qa", "video_qa"),
    Family.SPATIAL_INTELLIGENCE: _spec(
        "si", "choice_or_number", "spatial_intelligence", "spatial_intelligence"
    ),
    Family.MATH: _spec(
        "math", "math", "math_answer", "math", protocol="videorl.rewards.math_answer:BOXED_PROTOCOL"
    ),
}

FAMILY_ALIASES: dict[str, Family] = {
    **{f.value: f for f in Family},
    **{f.short: f for f in Family},
    "vtg": Family.TEMPORAL_GROUNDING,
    "temporal": Family.TEMPORAL_GROUNDING,
    "grounding": Family.TEMPORAL_GROUNDING,
    "moment_retrieval": Family.TEMPORAL_GROUNDING,
    "spatial": Family.SPATIAL_GROUNDING,
    "referring": Family.SPATIAL_GROUNDING,
    "rec": Family.SPATIAL_GROUNDING,
    "seg": Family.SEGMENTATION,
    "refseg": Family.SEGMENTATION,
    "vos": Family.SEGMENTATION,
    "track": Family.TRACKING,
    "sot": Family.TRACKING,
    "stvg": Family.SPATIO_TEMPORAL_GROUNDING,
    "spatiotemporal_grounding": Family.SPATIO_TEMPORAL_GROUNDING,
    "qa": Family.VIDEO_QA,
    "mcq": Family.VIDEO_QA,
    "videoqa": Family.VIDEO_QA,
    "multiple_choice": Family.VIDEO_QA,
    "vsi": Family.SPATIAL_INTELLIGENCE,
    "spatial_reasoning": Family.SPATIAL_INTELLIGENCE,
    "text_math": Family.MATH,
}

# Spatial-intelligence subtypes and their answer kind (docs/methods.md#answer-protocol).
SI_NUMERIC_SUBTYPES = ("abs_distance", "object_counting", "object_size", "room_size")
SI_CHOICE_SUBTYPES = ("rel_distance", "route_planning", "appearance_order", "rel_direction")


def parse_family(name: str | Family) -> Family:
    """Resolve a family name or alias; an unknown name is a configuration error."""
    if isinstance(name, Family):
        return name
    key = str(name).strip().lower().replace("-", "_").replace(" ", "_")
    if key in FAMILY_ALIASES:
        return FAMILY_ALIASES[key]
    close = difflib.get_close_matches(key, list(FAMILY_ALIASES), n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise ConfigError(
        f"unknown task family {name!r}{hint} (valid: {', '.join(f.value for f in Family)})"
    )
