"""Spatial intelligence's OraRL prefix and choice tail (the template is shared:
`tasks/choice_prompts.py`)."""

from __future__ import annotations

ORARL_SI_PREFIX = "These are frames of a video.\n"
ORARL_SI_CHOICE_TAIL = (
    "Answer with the option letter within <answer>...</answer> tags. Example: <answer>A</answer>"
)
