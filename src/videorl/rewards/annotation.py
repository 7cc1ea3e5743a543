"""Annotation serialization (OraRL, docs/methods.md#orarl): the exact response a perfect model would
give for a record, which scores exactly 1.0 under the record's own reward.

Examples: TG `<answer>2.5 to 7</answer>`, QA `<answer>B</answer>`, SG
`<answer>[10,20,110.5,80]</answer>` (compact JSON), math `\\boxed{\\frac{1}{2}}`; numbers
in their shortest exact form.
"""

from __future__ import annotations

from videorl.data.records import TaskRecord
from videorl.rewards.registry import FAMILY_REWARDS


def serialize_annotation(record: TaskRecord, think: bool = False) -> str:
    """The annotation row's response text; with `think`, after an empty think block
    (`<think>\\n\\n</think>\\n\\n`), which also satisfies `think_required`."""
    family = FAMILY_REWARDS[record.family]
    return family.protocol.wrap(family.serialize(record), think)
