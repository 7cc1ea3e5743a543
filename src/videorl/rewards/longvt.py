"""LongVT's RL reward as a reward plug-in (`configs/longvt.yaml`,
docs/fidelity.md#longvt-configslongvtyaml).

LongVT (EvolvingLMMs-Lab/LongVT) trains with `custom_rewards/tool_reward.py` and
`use_iou_reward=True` (`examples/video_tools/longvt_7b_rl_train.sh`), which scores a
trajectory as the sum of three terms (`custom_rewards/vl_agent.py: compute_score`):

- **accuracy**: the text of the answer block, judged against the ground truth: for an
  open-ended record (`TextAnswer`) with `reward.judge.url` set, the LLM judge's 1 / 0.5 / 0
  on the question (`extra.question`, LongVT's `extra_info.question`, else the record's
  problem) (`rewards/judge.py`; a judge failure scores 0 and is counted, counters
  `judge/failed_<reason>`); otherwise the record's family scorer (the exact option letter for
  video QA, the normalised exact text of an open-ended answer); an empty answer scores 0;
- **format**: `<think>` blocks balanced and present, `<tool_call>` tags balanced, exactly one
  `<answer>`; without tool calls the whole response is `<think>..</think><answer>..</answer>`,
  with them it starts with `<think>`, ends with `</answer>` and its tags run `think,
  (tool_call, think)*, answer`; an answer of 1000 characters or more zeroes accuracy and
  format (against judge hacking);
- **time**: the temporal IoU between the window of the *last* `crop_video` call and the
  record's evidence segment (`extra.video_segment: [start, end]` seconds, as LongVT's rows
  carry it), 0 without a call or a segment.

The plug-in sees the final model turn (`response`) and the row's calls, not the earlier
model turns' text, so the format term checks the final turn's shape and one call per calling
turn; an earlier turn without its `<think>` block is not caught.
`overall` is the mean of the three terms, LongVT's sum divided by 3 (plug-in components are
in [0, 1]); GRPO's `(r - mean) / (std + eps)` advantages are the same up to `eps`.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from videorl.data.records import TaskRecord, TextAnswer
from videorl.rewards.calls import ToolCallMade
from videorl.rewards.config import RewardConfig
from videorl.rewards.judge import judge, not_called
from videorl.rewards.plugins import COUNTERS
from videorl.rewards.registry import FAMILY_REWARDS

CROP_TOOL = "crop_video"
ANSWER_LIMIT = 1000  # characters: a longer answer scores accuracy 0 and format 0
_DIRECT = re.compile(r"\s*<think>.*?</think>\s*<answer>.*?</answer>\s*", re.DOTALL)
_OPENING = re.compile(r"<(think|tool_call|answer)>")


def answer_text(response: str) -> str:
    """The last answer block's text, stripped; "" when the response has no complete block."""
    if "<answer>" not in response or "</answer>" not in response:
        return ""
    return response.split("<answer>")[-1].split("</answer>")[0].strip()


def format_ok(response: str, calls: Sequence[ToolCallMade]) -> bool:
    """LongVT's format rule on what the plug-in sees: the final turn and the calls."""
    if response.count("<think>") != response.count("</think>") or "<think>" not in response:
        return False
    if response.count("<tool_call>") != response.count("</tool_call>"):
        return False
    if response.count("<answer>") != 1 or response.count("</answer>") != 1:
        return False
    if not calls and "<tool_call>" not in response:
        return _DIRECT.fullmatch(response) is not None
    stripped = response.strip()
    if not (stripped.startswith("<think>") and stripped.endswith("</answer>")):
        return False
    # Before the final turn, each calling turn must read `<think>..</think><tool_call>..`:
    # one call per turn (two would put tool_call, tool_call in the tag sequence).
    one_call_per_turn = all(n == 1 for n in Counter(call.turn for call in calls).values())
    return one_call_per_turn and _OPENING.findall(stripped) == ["think", "answer"]


def _window(call: ToolCallMade) -> tuple[float, float] | None:
    try:
        start, end = float(call.arguments["start_time"]), float(call.arguments["end_time"])
    except (KeyError, TypeError, ValueError):
        return None
    return (start, end) if math.isfinite(start) and math.isfinite(end) else None


def crop_iou(record: TaskRecord, calls: Sequence[ToolCallMade]) -> float:
    """IoU of the last readable `crop_video` window with `extra.video_segment`; 0 if none."""
    segment = record.extra.get("video_segment")
    if not isinstance(segment, list | tuple) or len(segment) != 2:
        return 0.0
    try:
        gt_start, gt_end = float(segment[0]), float(segment[1])
    except (TypeError, ValueError):
        return 0.0
    windows = (_window(call) for call in reversed(calls) if call.name == CROP_TOOL)
    window = next((w for w in windows if w is not None), None)
    if window is None:
        return 0.0
    start, end = window
    overlap = max(0.0, min(end, gt_end) - max(start, gt_start))
    span = max(end, gt_end) - min(start, gt_start)
    return overlap / span if span > 0 else 0.0


def score(
    record: TaskRecord, response: str, config: RewardConfig, calls: Sequence[ToolCallMade] = ()
) -> Mapping[str, Any]:
    """`format`, `task` (accuracy), `time_iou` and `overall` = their mean; with
    `reward.judge.url` set, also `counters`: the judge's `judge/calls` and
    `judge/failed_<reason>` (every row, 0 where the judge was not asked)."""
    answer = answer_text(response)
    fmt = 1.0 if format_ok(response, calls) else 0.0
    accuracy = 0.0
    judged = not_called() if config.judge.enabled else {}
    if len(answer) >= ANSWER_LIMIT:  # LongVT asks its judge, then zeroes: no call needed
        accuracy, fmt = 0.0, 0.0
    elif answer and config.judge.enabled and isinstance(record.answer, TextAnswer):
        question = str(record.extra.get("question") or record.problem)
        verdict = judge(config.judge, question, record.answer.text, answer)
        accuracy, judged = verdict.score, verdict.counters()
    elif answer:
        accuracy = float(FAMILY_REWARDS[record.family].score(record, answer, config)["task"])
    time_iou = crop_iou(record, calls)
    return {
        "format": fmt,
        "task": accuracy,
        "time_iou": time_iou,
        "overall": (accuracy + fmt + time_iou) / 3,
        **({COUNTERS: judged} if judged else {}),
    }
