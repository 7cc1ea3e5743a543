"""Math's prompt: the final answer in `\\boxed{}` inside the answer tags."""

from __future__ import annotations

from videorl.data.records import TaskRecord


def math(record: TaskRecord) -> str:
    return (
        f"{record.problem}\nGive the final answer in \\boxed{{}} inside the answer tags, "
        "as <answer>\\boxed{N}</answer>."
    )
