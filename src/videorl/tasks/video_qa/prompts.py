"""Video QA's OraRL tail (the question template is shared: `tasks/choice_prompts.py`)."""

from __future__ import annotations

ORARL_QA_TAIL = (
    "Answer with the option letter only within <answer>...</answer> tags. "
    "Example: <answer>A</answer>"
)
