"""Task family names and their aliases (METHODS.md section 1)."""

from __future__ import annotations

import difflib
from enum import Enum

from videorl.errors import ConfigError


class Family(str, Enum):
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
        return _SHORT[self]

    @property
    def uses_video(self) -> bool:
        return self is not Family.MATH


_SHORT = {
    Family.TEMPORAL_GROUNDING: "tg",
    Family.SPATIAL_GROUNDING: "sg",
    Family.SEGMENTATION: "seg",
    Family.TRACKING: "trk",
    Family.SPATIO_TEMPORAL_GROUNDING: "stg",
    Family.VIDEO_QA: "qa",
    Family.SPATIAL_INTELLIGENCE: "si",
    Family.MATH: "math",
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

# Spatial-intelligence subtypes and their answer kind (METHODS.md section 1 table).
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
