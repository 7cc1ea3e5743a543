"""Tracking: the box of an object in given frames (docs/methods.md#rewards).

Answer `TrackingAnswer` (a box per source-frame number); reward `reward.py` (OraRL's: `orarl.py`);
evaluation AO and SR@0.5; synthetic videos of a bouncing shape. OraRL's template keys boxes by
second (1..32) and ours by source frame, so there is no published prompt.

This package is the family: this module registers what reading and prompting a record
needs; `reward`, `evaluation`, `synth` and `demo` register the rest when first asked.
"""

from __future__ import annotations

from videorl.data.families import TaskFamily, register_family
from videorl.data.records import TrackingAnswer
from videorl.tasks.tracking.prompts import tracking as prompt

ALIASES = ("track", "sot")
register_family(TaskFamily("tracking", "trk", TrackingAnswer.from_dict, prompt, __name__, ALIASES))
