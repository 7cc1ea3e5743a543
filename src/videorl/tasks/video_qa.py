"""Video QA: multiple-choice questions about a video (docs/methods.md#rewards).

Answer `ChoiceAnswer` (a letter), or `TextAnswer` for an open-ended question (LongVT's rows:
a free-text ground truth, no options); reward `rewards/video_qa.py` (an open-ended answer is
scored by the LLM judge of `reward.judge` in the LongVT plug-in, `rewards/judge.py`);
evaluation accuracy (macro over subtypes too); synthetic questions about a colour or the
order of appearance.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from videorl.data.columns import json_cell, object_cell
from videorl.data.families import DemoParts, Family, TaskFamily, register_family
from videorl.data.formats import choice_letter
from videorl.data.prompts import choice_or_number
from videorl.data.published_prompts import (
    ORARL_QA_TAIL,
    orarl_choice_or_number,
    video_r1_choice_or_number,
)
from videorl.data.records import LETTERS, ChoiceAnswer, TaskRecord, TextAnswer, choice_value
from videorl.data.synth import SynthDraw
from videorl.data.synth_scene import COLORS
from videorl.data.synth_tasks import (
    appearing,
    frame_size,
    half_step,
    large_size,
    save_video,
    scatter,
)
from videorl.errors import DataError
from videorl.eval.blind import blind_choice
from videorl.eval.scoring import score_video_qa, summarize_video_qa
from videorl.rewards import orarl_adapters
from videorl.rewards import video_qa as reward
from videorl.tasks.common import choice_prediction, demo_view


def answer(data: dict[str, Any], where: str) -> ChoiceAnswer | TextAnswer:
    """`{"letter": "B"}`, or `{"text": "..."}` for an open-ended question."""
    if "letter" not in data and "text" in data:
        return text_value(data["text"], f"{where}.text")
    if "letter" not in data:
        raise DataError(f"{where}: missing field 'letter'")
    return choice_value(data["letter"], f"{where}.letter")


def text_value(value: Any, where: str) -> TextAnswer:
    if not isinstance(value, str) or not value.strip():
        raise DataError(f"{where}: expected a non-empty answer text, got {value!r}")
    return TextAnswer(value.strip())


def cell_answer(raw: Any, options: tuple[str, ...], column: str) -> ChoiceAnswer | TextAnswer:
    """A letter, the option's text or its 0-based index (`formats.choice_letter`); a row
    without options whose answer is text that is not a letter is open-ended (`TextAnswer`,
    LongVT's `reward_model.ground_truth`)."""
    raw = json_cell(raw)
    if isinstance(raw, dict):
        return object_cell(Family.VIDEO_QA, raw, column)
    letters = options or tuple(LETTERS)
    try:
        return ChoiceAnswer(choice_letter(raw.strip() if isinstance(raw, str) else raw, letters))
    except DataError:
        if options or not isinstance(raw, str) or not raw.strip():
            raise
        return TextAnswer(raw.strip())


def video_qa(rng: np.random.Generator, rid: str, out: Path) -> TaskRecord:
    """`colour`: what colour is the (only) shape, 40-60% of the frame's short side;
    `order`: which colour appears first of three shapes (a third of the short side) that
    appear 1 s apart. The options are the eight colours in one fixed order, so the prompt
    says nothing about the answer (blind best: the most frequent colour, about 1 in 8) and
    the letter is a function of what is seen; with four shuffled options a tiny model must
    also match a seen colour to a colour word, which it did not learn (lab note
    docs/lab/models-that-see.md). Large shapes: a tiny model learns to see them."""
    width, height = frame_size(rng)
    if rng.integers(2) == 0:
        duration = half_step(rng, 2.0, 4.0)
        (obj,) = scatter(rng, width, height, 1, sizes=(large_size(rng, width, height),) * 2)
        media = save_video(out, rid, width, height, duration, appearing([obj], first=0.0))
        problem, subtype, color = f"What colour is the {obj.shape}?", "colour", obj.color
    else:
        duration = 4.0
        third = min(width, height) // 3 - 4  # three shapes that still fit side by side
        items = scatter(rng, width, height, 3, sizes=(third - 4, third))  # appear 0.5, 1.5, 2.5 s
        media = save_video(out, rid, width, height, duration, appearing(items))
        problem, subtype, color = "Which colour appears first?", "order", items[0].color
    options = tuple(COLORS)
    answer = ChoiceAnswer(LETTERS[options.index(color)])
    return TaskRecord(
        id=rid,
        family=Family.VIDEO_QA,
        problem=problem,
        answer=answer,
        source="synth",
        video=media,
        duration=duration,
        options=options,
        subtype=subtype,
        width=width,
        height=height,
    )


def synthesize(draw: SynthDraw) -> TaskRecord:
    return video_qa(draw.rng, draw.rid, draw.out)


def _blank(options: tuple[str, ...], meta: Any) -> tuple[ChoiceAnswer, dict[str, Any]]:
    given = tuple(o.strip() for o in options if o.strip())
    if not 2 <= len(given) <= len(LETTERS):
        raise DataError(
            f"video QA needs 2 to {len(LETTERS)} options, one per line (got {len(given)})"
        )
    return ChoiceAnswer("A"), {"options": given}


register_family(
    TaskFamily(
        name="video_qa",
        short="qa",
        aliases=("mcq", "videoqa", "multiple_choice"),
        answer=answer,
        cell_answer=cell_answer,
        prompt=choice_or_number,
        published={
            "orarl": lambda record: orarl_choice_or_number(record, "", ORARL_QA_TAIL),
            "video_r1": video_r1_choice_or_number,
        },
        reward=reward.score,
        serialize=reward.serialize,
        orarl_reward=orarl_adapters.video_qa,
        eval_score=score_video_qa,
        summary=summarize_video_qa,
        blind=blind_choice,
        synth=synthesize,
        video_r1_types=("multiple choice",),
        demo=DemoParts(
            label="video QA",
            placeholder="the question, e.g. What colour is the square?",
            expected="<answer>X</answer> with an option letter",
            blank=_blank,
            parse=choice_prediction,
            view=lambda result: demo_view("choice_view")(result),
            options=True,
        ),
    )
)
