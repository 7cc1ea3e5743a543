"""ParaVT's PARA-GRPO reward as a reward plug-in (`configs/paravt.yaml`,
docs/fidelity.md#paravt-configsparavtyaml).

ParaVT (EvolvingLMMs-Lab/ParaVT, `paravt/rl/rewards/compose.py`) scores a trajectory as
`R = acc + format_weight * R_fmt + R_tool` on its *completion*: every model turn, the tool
turns left out (`workflow.py` decodes the loss-mask-1 tokens). Here the completion is
`trajectory_text(response, calls)`, the calling turns' texts and the final turn.

- **acc** (`compose.py: _compute_acc_reward`): on the extracted answer (`<answer>` body,
  else the text after `</think>` without tool blocks, else the last line); a normalised
  exact match is 1; else the record's family scorer (option letter, temporal IoU) or, for
  an open-ended record, the token F1 (`reward.mode: f1`, the recipe's).
- **R_fmt** (`format.py`, the parseability anchor), with `answer_suffix` on: +0.2 for a
  substantive `<think>` (>= 10 characters), +0.3 / +0.2 for `<answer>` / `</answer>` when
  an answer block has content; plus `anchor_weight` x (+0.4 for a closed `</think>`, +0.3
  for the full think -> answer flow, -0.3 for a `<think>` never closed); +0.3 when
  `<think>` precedes a parseable tool call; +0.1 when every tag pair is balanced (and the
  score is already > 0); capped at 1.
- **R_tool** (`tool.py`): 0 without a parseable call, 0.1 with one, 0.3 when a tool
  answered, +0.5 when the answer is also correct.

`overall` is `R / (2 + format_weight - 0.2)`, ParaVT's sum over its largest value (2.8 with
the recipe's format weight 1.0), so that it lies in [0, 1]; GRPO's normalised advantages
are the same up to `eps`. `score` is PARA-GRPO (anchor weight 0.5); `score_vanilla` the
paper's vanilla GRPO baseline (anchor weight 0, `vanilla_grpo_8b.yaml`).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from videorl.data.records import TaskRecord, TextAnswer
from videorl.rewards.calls import ToolCallMade, trajectory_text
from videorl.rewards.config import RewardConfig
from videorl.rewards.registry import FAMILY_REWARDS

FORMAT_WEIGHT = 1.0  # paragrpo_8b.yaml: paravt.reward.format_weight
ANCHOR_WEIGHT = 0.5  # paragrpo_8b.yaml: paravt.anchoring.weight
MAX_TOOL = 0.8  # tool.py: 0.3 (tool answered) + 0.5 (and correct)
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
_THINK_CLOSED = re.compile(r"<think>(.*?)</think>", re.DOTALL)
_THINK_OPEN = re.compile(r"<think>(.*?)(?:<tool_|<answer>|$)", re.DOTALL)
_TOOL_CALL = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL)
_TOOL_BLOCK = re.compile(r"<tool_call>.*?</tool_call>", re.DOTALL)
_TAG_PAIRS = (("<think>", "</think>"), ("<tool_call>", "</tool_call>"), ("<answer>", "</answer>"))


def extract_answer(completion: str) -> str:
    """The `<answer>` body, else the text after `</think>` without tool blocks, else the
    last non-empty line that is not a tag line (`utils.py: extract_answer`)."""
    if found := _ANSWER.search(completion):
        return found.group(1).strip()
    if "</think>" in completion:
        tail = _TOOL_BLOCK.sub("", completion.split("</think>", 1)[1]).strip()
        if tail:
            return tail
    lines = [line.strip() for line in completion.splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith(("<tool_", "<|im_"))]
    return lines[-1] if lines else ""


def normalize_text(text: str) -> str:
    """Lower case, without articles and punctuation, single spaces (`utils.py`)."""
    text = re.sub(r"\b(a|an|the)\b", " ", text.strip().lower())
    return " ".join(re.sub(r"[^\w\s]", "", text).split())


def token_f1(prediction: str, reference: str) -> float:
    """SQuAD token F1 of the normalised texts."""
    ours, theirs = normalize_text(prediction).split(), normalize_text(reference).split()
    common = sum((Counter(ours) & Counter(theirs)).values())
    if not common:
        return 0.0
    precision, recall = common / len(ours), common / len(theirs)
    return 2 * precision * recall / (precision + recall)


def parseable_tool_call(completion: str) -> bool:
    """A `<tool_call>` whose body is a JSON object with a `name` (empty tags do not count)."""
    for body in _TOOL_CALL.findall(completion):
        try:
            call = json.loads(body.strip())
        except ValueError:
            continue
        if isinstance(call, dict) and "name" in call:
            return True
    return False


def substantive_think(completion: str, min_chars: int = 10) -> bool:
    found = _THINK_CLOSED.search(completion) or _THINK_OPEN.search(completion)
    return found is not None and len(found.group(1).strip()) >= min_chars


def think_before_tool(completion: str) -> bool:
    think, call = completion.find("<think>"), completion.find("<tool_call>")
    return think != -1 and call != -1 and think < call


def format_reward(
    completion: str, anchor_weight: float = ANCHOR_WEIGHT, answer_suffix: bool = True
) -> float:
    """ParaVT's parseability-anchored format reward in [0, 1] (module docstring); without
    `answer_suffix` (the vanilla baseline) think earns 0.3 and the answer tags 0.2 + 0.1."""
    think = substantive_think(completion)
    answer = any(body.strip() for body in _ANSWER.findall(completion))
    think_part, answer_part = (0.2, 0.5) if answer_suffix else (0.3, 0.3)
    score = think_part * think + answer_part * answer
    closed = think and "</think>" in completion
    anchor = 0.4 * closed + 0.3 * (closed and answer)
    if "<think>" in completion and "</think>" not in completion:
        anchor -= 0.3
    score += anchor_weight * anchor
    if think and parseable_tool_call(completion) and think_before_tool(completion):
        score += 0.3
    if score > 0 and all(completion.count(a) == completion.count(b) for a, b in _TAG_PAIRS):
        score += 0.1
    return min(score, 1.0)


def tool_reward(completion: str, answered: bool, accuracy: float) -> float:
    """0 without a parseable call; 0.1 with one, 0.3 once a tool answered; +0.5 if correct."""
    if not parseable_tool_call(completion):
        return 0.0
    return (0.3 if answered else 0.1) + (0.5 if accuracy > 0 else 0.0)


def accuracy(record: TaskRecord, answer: str, config: RewardConfig) -> float:
    """1 for a normalised exact match; else the family scorer, or token F1 when open-ended."""
    if not answer:
        return 0.0
    if isinstance(record.answer, TextAnswer):
        reference = record.answer.text
        return (
            1.0
            if normalize_text(answer) == normalize_text(reference)
            else token_f1(answer, reference)
        )
    return float(FAMILY_REWARDS[record.family].score(record, answer, config)["task"])


def paravt_reward(
    record: TaskRecord,
    response: str,
    config: RewardConfig,
    calls: Sequence[ToolCallMade],
    anchor_weight: float,
    answer_suffix: bool,
) -> dict[str, float]:
    completion = trajectory_text(response, calls)
    acc = accuracy(record, extract_answer(completion), config)
    fmt = format_reward(completion, anchor_weight, answer_suffix)
    tool = tool_reward(completion, any(call.ok for call in calls), acc)
    total = acc + FORMAT_WEIGHT * fmt + tool
    return {
        "format": fmt,
        "task": acc,
        "tool": tool / MAX_TOOL,
        "overall": total / (1.0 + FORMAT_WEIGHT + MAX_TOOL),
    }


def score(
    record: TaskRecord, response: str, config: RewardConfig, calls: Sequence[ToolCallMade] = ()
) -> Mapping[str, Any]:
    """PARA-GRPO: `format`, `task` (acc), `tool` (R_tool / 0.8) and `overall` (R / 2.8)."""
    return paravt_reward(record, response, config, calls, ANCHOR_WEIGHT, answer_suffix=True)


def score_vanilla(
    record: TaskRecord, response: str, config: RewardConfig, calls: Sequence[ToolCallMade] = ()
) -> Mapping[str, Any]:
    """ParaVT's vanilla GRPO baseline (`vanilla_grpo_8b.yaml`): no anchor (weight 0) and
    the default tag weights (`answer_suffix: false`)."""
    return paravt_reward(record, response, config, calls, 0.0, answer_suffix=False)
