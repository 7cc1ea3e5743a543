"""Temporal grounding's prompts: videorl's, OraRL's (`eval/task/eval_prompt.py`) and TaRO's
(`data/train.json`), verbatim."""

from __future__ import annotations

from videorl.data.prompts import duration_sentence
from videorl.data.records import TaskRecord


def temporal(record: TaskRecord) -> str:
    return (
        f"{duration_sentence(record)}Find the start and end of the moment described by: "
        f'"{record.problem}". Answer with the start and end time in seconds as '
        "<answer>S to E</answer>, for example <answer>2.5 to 7</answer>."
    )


ORARL_TG = (
    'To accurately pinpoint the event "{}" in the video, '
    "determine the precise time period of the event. "
    "Provide the start and end times (in seconds) "
    'in the format "start time to end time" within <answer> </answer> tags. '
    "Example: <answer> 12 to 18 </answer>"
)
TARO_TG = (
    'To accurately pinpoint the event "{}" in the video, determine the precise time period '
    "of the event.\n\nOutput your thought process within the <think> </think> tags, including "
    "analysis with either specific time ranges (xx.xx to xx.xx) in <timestep> </timestep> "
    "tags.\n\nThen, provide the start and end times (in seconds, precise to two decimal "
    'places) in the format "start time to end time" within the <answer> </answer> tags. For '
    "example:\n\n<think>\nI need to find the specific moment a person eats from a box.\n"
    "From 0.0s to 5.2s, a person is holding a box of food and talking to the camera, but they "
    "are not eating yet.\nFrom 5.3s to 8.1s, the person opens the box and looks inside. Still "
    "no eating action.\nAt 8.2s, the person picks up a piece of food from the box.\nFrom 8.5s "
    "to 12.4s, the person puts the food in their mouth and chews while holding the box. This "
    'clearly matches "eating from a box."\nFrom 12.5s to 15.0s, the person puts the box down '
    "and wipes their mouth. The action has ended.\nTherefore, the relevant segment starts when "
    "the food approaches the mouth and ends when the chewing action concludes or the box is "
    "lowered.\n</think>\n<answer>\n8.50s to 12.40s\n</answer>"
)


def orarl_temporal(record: TaskRecord) -> str:
    return ORARL_TG.format(record.problem)


def taro_temporal(record: TaskRecord) -> str:
    return TARO_TG.format(record.problem)
