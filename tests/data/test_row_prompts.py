"""Rows that carry their own prompt get it once, the way their trainer builds it (issue 33
item 5): verl's chat used as given, EasyR1's `problem` in its format prompt, OraRL-Data in
OraRL's task templates, TaRO's rows as TaRO trains on them.

Each row below is in its ecosystem's exact layout; `TARO_TEST_ROW` is row 0 of TaRO's
`data/test.json` (oceanflowlab/TaRO), verbatim. The asserted prompt texts are what the
published code builds: TaRO's `VTGDataset._build_messages` (`src/vtg_dataset.py`) splits the
chat's user text at `<video>`; EasyR1's `RLHFDataset._build_messages`
(`verl/utils/dataset.py`) renders `Template(format_prompt.strip()).render(content=problem)`
and splits it at `<video>` / `<image>`.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from videorl.data.families import Family
from videorl.data.formats import detect_format
from videorl.data.loaders import load_records
from videorl.data.prompts import build_prompt
from videorl.data.records import DenseCaption, TemporalAnswer, record_from_dict
from videorl.errors import ConfigError, DataError
from videorl.models.inputs import chat_messages
from videorl.rollout.groups import constructed_prefix
from videorl.tasks.temporal_grounding.prompts import ORARL_TG, TARO_TG

TARO_TEST_ROW = json.loads(
    r"""{"data_source": "vtgbench", "prompt": [{"role": "user", "content": "<video>To accurately pinpoint the event \"a person was sitting at a table\" in the video, determine the precise time period of the event.\n\nOutput your thought process within the <think> </think> tags, including analysis with either specific time ranges (xx.xx to xx.xx) in <timestep> </timestep> tags.\n\nThen, provide the start and end times (in seconds, precise to two decimal places) in the format \"start time to end time\" within the <answer> </answer> tags. For example:\n\n<think>\nI need to find the specific moment a person eats from a box.\nFrom 0.0s to 5.2s, a person is holding a box of food and talking to the camera, but they are not eating yet.\nFrom 5.3s to 8.1s, the person opens the box and looks inside. Still no eating action.\nAt 8.2s, the person picks up a piece of food from the box.\nFrom 8.5s to 12.4s, the person puts the food in their mouth and chews while holding the box. This clearly matches \"eating from a box.\"\nFrom 12.5s to 15.0s, the person puts the box down and wipes their mouth. The action has ended.\nTherefore, the relevant segment starts when the food approaches the mouth and ends when the chewing action concludes or the box is lowered.\n</think>\n<answer>\n8.50s to 12.40s\n</answer>"}], "videos": ["data/TimeR1-Dataset/tvgbench_data/KWZSA.mp4"], "video_start": null, "video_end": null, "ability": "vtg", "reward_model": {"style": "rule", "ground_truth": [13.4, 28.1]}, "extra_info": {"split": "test", "index": 0, "duration": 30.12}}"""
)
TARO_INSTRUCTION = TARO_TEST_ROW["prompt"][0]["content"].removeprefix("<video>")
QUERY = "a person was sitting at a table"
R1V_TAIL = (
    " A conversation between User and Assistant. The user asks a question, and the Assistant "
    "solves it. The assistant first thinks about the reasoning process in the mind and then "
    "provides the user with the answer. The reasoning process and answer are enclosed within "
    "<think> </think> and <answer> </answer> tags, respectively, i.e., <think> reasoning "
    "process here </think><answer> answer here </answer>"
)
MATH_TAIL = (
    " You FIRST think about the reasoning process as an internal monologue and then provide "
    "the final answer. The reasoning process MUST BE enclosed within <think> </think> tags. "
    "The final answer MUST BE put in \\boxed{}."
)


def load(tmp_path: Path, rows: list[dict], **kwargs):
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return load_records(path, **kwargs)


def user_content(record, kind: str = "video", think: bool = True) -> list[dict]:
    """The user turn `encode_prompt` hands the chat template for `record`."""
    text = build_prompt(record, think=think, style="taro")
    messages = chat_messages(text, video=kind == "video", image=kind == "image")
    return messages[-1]["content"]


# ----- TaRO ---------------------------------------------------------------------------------


def test_taro_test_row_is_not_math_and_trains_as_taro():
    assert detect_format(TARO_TEST_ROW) == "verl"  # was `math`


def test_taro_test_row_prompt_is_its_own_once(tmp_path):
    (record,) = load(tmp_path, [TARO_TEST_ROW]).records
    assert record.family == Family("temporal_grounding")
    assert record.answer == TemporalAnswer(((13.4, 28.1),)) and record.duration == 30.12
    assert record.problem == QUERY  # the query inside the instruction
    assert record.video.path.endswith("KWZSA.mp4") and record.video.start is None
    assert record.id == "0" and record.source == "vtgbench"
    for style in ("taro", "videorl", "orarl"):  # the row's prompt, whatever the run's style
        for think in (True, False):
            assert build_prompt(record, think=think, style=style) == "<video>" + TARO_INSTRUCTION
    assert user_content(record) == [{"type": "video"}, {"type": "text", "text": TARO_INSTRUCTION}]
    # the nested prompt is gone, and our TaRO template is the row's text byte for byte
    assert TARO_INSTRUCTION.count("To accurately pinpoint the event") == 1
    assert "Find the start and end of the moment" not in build_prompt(record, think=True)
    assert TARO_TG.format(QUERY) == TARO_INSTRUCTION


def test_taro_train_row_query_captions_and_clip(tmp_path):
    """TaRO's train.json (not in the published repository) adds the columns its agent loop
    reads: `query` and `captions` (strings, joined verbatim by `sample_reasoning`); a clip row
    has `video_start` / `video_end` with the ground truth and duration of the clip, as the
    252 clip rows of data/test.json (e.g. index 154: start 53.06, end 152.43, duration 99.37,
    ground truth [9.94, 45.94])."""
    captions = [
        "From 0.0s to 5.2s, a person walks into the kitchen.",
        "At 8.2s, the person sits down at the table.",
        "From 9.0s to 20.0s, the person reads at the table.",
    ]
    row = {
        **TARO_TEST_ROW,
        "query": QUERY,
        "captions": captions,
        "video_start": 53.05562446378865,
        "video_end": 152.42562446378867,
        "reward_model": {"style": "rule", "ground_truth": [9.944375536211354, 45.94437553621135]},
        "extra_info": {"split": "train", "index": 154, "duration": 99.37},
    }
    (record,) = load(tmp_path, [row]).records
    assert record.problem == QUERY
    assert (record.video.start, record.video.end) == (53.05562446378865, 152.42562446378867)
    assert record.duration == 99.37 and record.answer.windows == (
        (9.944375536211354, 45.94437553621135),
    )
    assert [c.as_line() for c in record.captions] == captions  # verbatim
    assert record.captions[1] == DenseCaption(
        8.2, 8.2, "the person sits down at the table.", captions[1]
    )
    prefix = constructed_prefix(record, random.Random(3))
    head = f"<think>\nI need to find the specific moment {QUERY}.\n"
    assert prefix.startswith(head)
    chosen = prefix[len(head) :].split("\n")
    assert chosen and all(line in captions for line in chosen)
    assert chosen == sorted(chosen, key=captions.index)  # order preserved
    assert build_prompt(record, think=True, style="taro") == "<video>" + TARO_INSTRUCTION
    again = record_from_dict(record.to_dict())  # videorl's own JSON keeps all of it
    assert again == record


# ----- verl ---------------------------------------------------------------------------------


def test_verl_chat_is_used_as_given_with_the_video_where_it_stands(tmp_path):
    row: dict[str, Any] = {
        "data_source": "nextqa",
        "prompt": [
            {"role": "system", "content": "You are a careful video analyst."},
            {
                "role": "user",
                "content": "Watch the clip.\n<video>\nWhat does the man hold? "
                "Answer with the option letter in <answer></answer>.",
            },
        ],
        "ability": "video_qa",
        "reward_model": {"style": "rule", "ground_truth": "B"},
        "videos": ["clip.mp4"],
        "options": ["a cup", "a ball", "a hat"],
        "extra_info": {"index": 11, "split": "train"},
    }
    (record,) = load(tmp_path, [row]).records
    text = row["prompt"][1]["content"]
    assert record.prompt == text and record.system == "You are a careful video analyst."
    assert build_prompt(record, think=False, style="videorl") == text  # no options appended
    assert record.problem == (  # the text without its placeholder, for identity and display
        "Watch the clip.\n \nWhat does the man hold? Answer with the option letter in "
        "<answer></answer>."
    )
    messages = chat_messages(build_prompt(record, think=False), video=True, system=record.system)
    assert messages == [
        {"role": "system", "content": "You are a careful video analyst."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Watch the clip.\n"},
                {"type": "video"},
                {
                    "type": "text",
                    "text": "\nWhat does the man hold? Answer with the option letter in "
                    "<answer></answer>.",
                },
            ],
        },
    ]


def test_verl_typed_parts_and_chat_template_rendering(tmp_path, tiny_model_dir):
    from videorl.models.loading import load_model

    row = {
        "prompt": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Where is the cup? "},
                    {"type": "image"},
                    {"type": "text", "text": " Answer [x1, y1, x2, y2] in <answer></answer>."},
                ],
            }
        ],
        "reward_model": {"ground_truth": [1, 2, 3, 4]},
        "images": ["frame.png"],
        "ability": "spatial_grounding",
    }
    (record,) = load(tmp_path, [row]).records
    assert (
        record.prompt == "Where is the cup? <image> Answer [x1, y1, x2, y2] in <answer></answer>."
    )
    loaded = load_model(tiny_model_dir("qwen2_5_vl"))
    messages = chat_messages(build_prompt(record, think=False), image=True)
    rendered = loaded.processor.apply_chat_template(
        messages, add_generation_prompt=True, tokenize=False
    )
    assert "<|im_start|>user\nWhere is the cup? <|vision_start|><|image_pad|><|vision_end|> " in (
        rendered
    )


@pytest.mark.parametrize(
    "content, videos, message",
    [
        ("<video><video>Twice?", ["a.mp4"], "2 <video> placeholders"),
        ("<image>Which?", ["a.mp4"], "has a <image> placeholder but its media is a video"),
        ("<video>Nothing?", None, "has a <video> placeholder but no media"),
    ],
)
def test_placeholders_must_fit_the_media(tmp_path, content, videos, message):
    row = {
        "prompt": [{"role": "user", "content": content}],
        "reward_model": {"ground_truth": "2 to 3" if videos else "4"},
        "ability": "tg" if videos else "math",
        **({"videos": videos} if videos else {}),
    }
    with pytest.raises(DataError, match=message):
        load(tmp_path, [row])


def test_a_chat_with_an_assistant_turn_is_refused(tmp_path):
    row = {
        "prompt": [
            {"role": "user", "content": "1 + 1?"},
            {"role": "assistant", "content": "2"},
            {"role": "user", "content": "2 + 2?"},
        ],
        "reward_model": {"ground_truth": "4"},
    }
    with pytest.raises(DataError, match="assistant turn"):
        load(tmp_path, [row])


# ----- EasyR1 -------------------------------------------------------------------------------


EASYR1_VIDEO_ROW = {
    "problem": "<video>When does the cat jump onto the sofa?",
    "answer": "2.5 to 4.0",
    "videos": ["clip.mp4"],
    "problem_type": "temporal_grounding",
}
EASYR1_MATH_ROW = {"problem": "What is 2 + 3?", "answer": "5", "images": []}


def test_easyr1_problem_in_its_format_prompt(tmp_path):
    """EasyR1's default `examples/config.yaml` pairs math.jinja with its `\\boxed{}` reward;
    its clevr / geoqa baselines pair r1v.jinja with the `<answer>` reward. `auto` picks the
    one whose answer form videorl scores the family by."""
    tg, math = load(tmp_path, [EASYR1_VIDEO_ROW, EASYR1_MATH_ROW]).records
    assert detect_format(EASYR1_VIDEO_ROW) == "easyr1"
    assert tg.prompt == "<video>When does the cat jump onto the sofa?" + R1V_TAIL
    assert math.family == Family("math") and math.prompt == "What is 2 + 3?" + MATH_TAIL
    assert tg.problem == "When does the cat jump onto the sofa?"
    assert user_content(tg) == [
        {"type": "video"},
        {"type": "text", "text": "When does the cat jump onto the sofa?" + R1V_TAIL},
    ]
    (tg,) = load(tmp_path, [EASYR1_VIDEO_ROW], format_prompt="math").records
    assert tg.prompt == "<video>When does the cat jump onto the sofa?" + MATH_TAIL
    (tg,) = load(tmp_path, [EASYR1_VIDEO_ROW], format_prompt="none").records
    assert tg.prompt == "<video>When does the cat jump onto the sofa?"


def test_easyr1_problem_that_states_its_answer_format_gets_one_format_prompt(tmp_path):
    row = {**EASYR1_VIDEO_ROW, "problem": "<video>" + TARO_INSTRUCTION}
    (record,) = load(tmp_path, [row], format_prompt="none").records
    assert record.prompt == "<video>" + TARO_INSTRUCTION and record.problem == QUERY


def test_easyr1_format_prompt_from_a_jinja_file(tmp_path):
    template = tmp_path / "mine.jinja"
    template.write_text("Question: {{ content | trim }}\nAnswer inside <answer></answer>.\n")
    (record,) = load(tmp_path, [EASYR1_VIDEO_ROW], format_prompt=str(template)).records
    assert record.prompt == (
        "Question: <video>When does the cat jump onto the sofa?\nAnswer inside <answer></answer>."
    )
    assert user_content(record) == [
        {"type": "text", "text": "Question: "},
        {"type": "video"},
        {
            "type": "text",
            "text": "When does the cat jump onto the sofa?\nAnswer inside <answer></answer>.",
        },
    ]
    with pytest.raises(ConfigError, match="data.format_prompt"):
        load(tmp_path, [EASYR1_VIDEO_ROW], format_prompt=str(tmp_path / "missing.jinja"))


# ----- OraRL-Data ---------------------------------------------------------------------------


ORARL_ROW = {  # OraRL `orarl/data/schema.py`: CANONICAL_FIELDS plus the family it adds
    "problem": "a dog jumps over the fence",
    "answer": [3.0, 7.5],
    "images": [],
    "videos": ["clip.mp4"],
    "problem_type": "temporal grounding",
    "source": "charades",
    "family": "temporal_grounding",
}


def test_orarl_data_gets_orarl_task_templates(tmp_path):
    assert detect_format(ORARL_ROW) == "orarl"
    (record,) = load(tmp_path, [ORARL_ROW]).records
    assert record.prompt is None and record.prompt_style == "orarl"
    orarl = ORARL_TG.format("a dog jumps over the fence")
    assert build_prompt(record, think=False, style="videorl") == orarl
    assert build_prompt(record, think=False, style="taro") == orarl
    assert user_content(record, think=False) == [{"type": "video"}, {"type": "text", "text": orarl}]


def test_orarl_row_that_already_holds_the_instruction_is_not_wrapped_again(tmp_path):
    row = {**ORARL_ROW, "problem": ORARL_TG.format("a dog jumps over the fence")}
    (record,) = load(tmp_path, [row]).records
    assert record.problem == "a dog jumps over the fence"
    assert build_prompt(record, think=False) == row["problem"]


# ----- no row with media is math ------------------------------------------------------------


@pytest.mark.parametrize(
    "row, expected",
    [
        (TARO_TEST_ROW, "verl"),
        ({"prompt": "When?", "answer": "1 to 2", "video": "a.mp4"}, "columns"),
        ({"question": "Where?", "solution": "[1, 2, 3, 4]", "image": "a.png"}, "columns"),
        ({"problem": "Where?", "answer": "[1, 2, 3, 4]", "images": ["a.png"]}, "easyr1"),
        ({"prompt": "What is 2 + 3?", "answer": "5"}, "math"),
    ],
)
def test_detect_format_never_calls_a_row_with_media_math(row, expected):
    assert detect_format(row) == expected


def test_records_format_keeps_the_prompt_and_checks_its_placeholder():
    base = {
        "id": "r1",
        "family": "temporal_grounding",
        "problem": QUERY,
        "answer": {"windows": [[1, 2]]},
        "video": "a.mp4",
        "prompt": "<video>" + TARO_INSTRUCTION,
        "captions": ["At 1.0s, a person sits.", [2.0, 3.0, "the person reads"]],
    }
    record = record_from_dict(base)
    assert build_prompt(record, think=False) == base["prompt"]
    assert [c.as_line() for c in record.captions] == [
        "At 1.0s, a person sits.",
        "From 2.0s to 3.0s, the person reads",
    ]
    with pytest.raises(DataError, match="2 <video> placeholder"):
        record_from_dict({**base, "prompt": "<video><video>twice"})
    with pytest.raises(DataError, match="1 <image> placeholder"):
        record_from_dict({**base, "prompt": "<image>which?"})
