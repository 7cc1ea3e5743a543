"""Spatio-temporal grounding: when, and where at each second, a described object appears
(docs/methods.md#rewards).

Answer `SpatioTemporalAnswer` (a window and boxes keyed by second); reward
`reward.py` (OraRL's: `orarl.py`); evaluation m_tIoU and m_sIoU; synthetic videos of a
shape crossing the upper half.

This package is the family: this module registers what reading and prompting a record
needs; `reward`, `evaluation`, `synth` and `demo` register the rest when first asked.
"""

from __future__ import annotations

from videorl.data.families import TaskFamily, register_family
from videorl.data.records import SpatioTemporalAnswer
from videorl.tasks.spatio_temporal_grounding.prompts import orarl_spatio_temporal, spatio_temporal

ALIASES = ("stvg", "spatiotemporal_grounding")
PUBLISHED = {"orarl": orarl_spatio_temporal}
register_family(
    TaskFamily(
        "spatio_temporal_grounding",
        "stg",
        SpatioTemporalAnswer.from_dict,
        spatio_temporal,
        __name__,
        ALIASES,
        published=PUBLISHED,
    )
)
