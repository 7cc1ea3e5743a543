"""The published prompt templates, per family: `orarl` (OraRL's `eval/task/eval_prompt.py`,
byte-aligned with its training data), `taro` (TaRO's temporal-grounding prompt, its
`data/train.json` / `data/test.json`) and `video_r1` (Video-R1's `QUESTION_TEMPLATE` +
`TYPE_TEMPLATE`, `src/r1-v/src/open_r1/grpo.py`, for multiple-choice and numeric questions).

EasyR1's format prompts (`easyr1_format_prompt`, hiyouga/EasyR1
`examples/format_prompt/{math,r1v}.jinja`) wrap an EasyR1 row's `problem` at load time.

Each family's module (`videorl/tasks/`) names its templates by style; `published_prompt(record,
style)` returns the user text, or None where the style has no template for the family (the caller then uses videorl's own). OraRL's prompts ask for the
answer alone (its recipe trains answer-only); TaRO's asks for `<think>` reasoning and an
answer `S.SSs to E.EEs`. Coordinates are not stated in OraRL's prompts: the model answers
in its native convention (`data.coordinates`).
"""

from __future__ import annotations

import re
from pathlib import Path

from videorl.data.families import Family
from videorl.data.records import LETTERS, NumericAnswer, TaskRecord, TextAnswer
from videorl.errors import ConfigError

ORARL_TG = (
    'To accurately pinpoint the event "{}" in the video, '
    "determine the precise time period of the event. "
    "Provide the start and end times (in seconds) "
    'in the format "start time to end time" within <answer> </answer> tags. '
    "Example: <answer> 12 to 18 </answer>"
)
ORARL_SG = (
    'Locate "{}" in the image. Output its bounding box in JSON format '
    "within <answer>...</answer> tags. "
    'Example: <answer>[{{"bbox_2d": [123, 30, 404, 846]}}]</answer>'
)
ORARL_QA_TAIL = (
    "Answer with the option letter only within <answer>...</answer> tags. "
    "Example: <answer>A</answer>"
)
ORARL_SI_PREFIX = "These are frames of a video.\n"
ORARL_SI_CHOICE_TAIL = (
    "Answer with the option letter within <answer>...</answer> tags. Example: <answer>A</answer>"
)
ORARL_SI_NUMBER_TAILS = {
    "object_counting": "Answer with an integer within <answer>...</answer> tags. "
    "Example: <answer>3</answer>",
    "abs_distance": "Answer with a number in meters within <answer>...</answer> tags. "
    "Example: <answer>2.3</answer>",
    "object_size": "Answer with a number in centimeters within <answer>...</answer> tags. "
    "Example: <answer>120.5</answer>",
    "room_size": "Answer with a number in square meters within <answer>...</answer> tags. "
    "Example: <answer>25.5</answer>",
}
ORARL_GROUNDING_QUESTION = "{}\nPlease answer this question based on the visual content. "
ORARL_STG_QUESTION = (
    'Given the query "{}", when and where does the described content '
    "occur in the video? please firstly give the start and end time, spatial "
    "bounding box corresponding to each integer second."
)
ORARL_STG_TAIL = (
    "Please provide only the time span in seconds and bounding boxes as JSON "
    "within the <answer>...</answer> tags.\n"
    "You MUST output one bounding box for every integer second within the "
    "given time span (inclusive).\n"
    "Example:\n"
    '<answer>{"time": [8.1, 13.5], "boxes": {"9": [317, 422, 582, 997], '
    '"10": [332, 175, 442, 369], "11": [340, 180, 450, 370]}}</answer>\n'
    "Note: Each key in 'boxes' must be an integer second within the span, "
    "and its value must be a 4-number bounding box [x1, y1, x2, y2]."
)
_SEG_POINTS = (
    "Choose informative points that help distinguish object vs. background. Prefer negatives "
    "on clear non-object pixels INSIDE the box when safe; otherwise place them just outside on "
    "obvious background. Negatives must NEVER be on the object or on its boundary.\n"
)
ORARL_SEG_IMAGE_TAIL = (
    "Please answer this question based on the visual content. "
    "This task prepares inputs for image object segmentation with a specialized model "
    "(e.g., SAM2).\n"
    "Please provide ONE bounding box, 3 positive points (clearly INSIDE the object), "
    "and 3 negative points (clearly OUTSIDE the object) within the <answer>...</answer> tags.\n"
    + _SEG_POINTS
    + 'Example: <answer>{"boxes": [x1, y1, x2, y2], "positive_points": [[x,y],[x,y],[x,y]], '
    '"negative_points": [[x,y],[x,y],[x,y]]}</answer>'
)
ORARL_SEG_VIDEO_TAIL = (
    "Please answer this question based on the visual content. "
    "This task prepares inputs for video object segmentation with a specialized model "
    "(e.g., SAM2).\n"
    "Please select ONE representative time (in seconds), and provide ONE bounding box, "
    "3 positive points (clearly INSIDE the object), and 3 negative points (clearly OUTSIDE "
    "the object) within the <answer>...</answer> tags.\n"
    + _SEG_POINTS
    + 'Example: <answer>{"time": <time_in_seconds>, "boxes": [x1, y1, x2, y2], '
    '"positive_points": [[x,y],[x,y],[x,y]], "negative_points": [[x,y],[x,y],[x,y]]}</answer>'
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


def _options(record: TaskRecord) -> str:
    return "\n".join(
        f"{letter}. {text}" for letter, text in zip(LETTERS, record.options, strict=False)
    )


def _sentence(text: str) -> str:
    """OraRL's spatial-grounding expression: stripped, ending in `.`, `?` or `!`."""
    text = text.strip()
    return text + "." if text and text[-1] not in ".?!" else text


def orarl_choice_or_number(record: TaskRecord, prefix: str, choice_tail: str) -> str:
    """OraRL's question template: `prefix`, the problem, then a number's tail by subtype, or
    the options and `choice_tail` (an open-ended question, which OraRL has not: the problem
    and a request for a short answer in the tags)."""
    if isinstance(record.answer, TextAnswer):
        return f"{prefix}{record.problem} Answer briefly within <answer>...</answer> tags."
    if isinstance(record.answer, NumericAnswer) or not record.options:
        tail = ORARL_SI_NUMBER_TAILS.get(
            record.subtype or "", ORARL_SI_NUMBER_TAILS["abs_distance"]
        )
        return f"{prefix}{record.problem} {tail}"
    return f"{prefix}{record.problem}\nOptions:\n{_options(record)}\n{choice_tail}"


def orarl_temporal(record: TaskRecord) -> str:
    return ORARL_TG.format(record.problem)


def orarl_spatial(record: TaskRecord) -> str:
    return ORARL_SG.format(_sentence(record.problem))


def orarl_spatio_temporal(record: TaskRecord) -> str:
    question = ORARL_STG_QUESTION.format(record.problem)
    return ORARL_GROUNDING_QUESTION.format(question) + ORARL_STG_TAIL


def orarl_segmentation(record: TaskRecord) -> str:
    tail = ORARL_SEG_VIDEO_TAIL if record.video is not None else ORARL_SEG_IMAGE_TAIL
    return f"{record.problem}\n{tail}"


def taro_temporal(record: TaskRecord) -> str:
    return TARO_TG.format(record.problem)


VIDEO_R1_QUESTION = (
    "{}\n"
    "Please think about this question as if you were a human pondering deeply. "
    "Engage in an internal dialogue using expressions such as 'let me think', 'wait', 'Hmm', "
    "'oh, I see', 'let's break it down', etc, or other natural language thought expressions "
    "It's encouraged to include self-reflection or verification in the reasoning process. "
    "Provide your detailed reasoning between the <think> </think> tags, and then give your "
    "final answer between the <answer> </answer> tags."
)
VIDEO_R1_CHOICE_TAIL = (
    " Please provide only the single option letter (e.g., A, B, C, D, etc.) within the "
    "<answer> </answer> tags."
)
# Video-R1's "numerical" and "regression" tails are the same text
# Video-R1's `free-form` type template (open-ended questions).
VIDEO_R1_TEXT_TAIL = " Please provide your text answer within the <answer> </answer> tags."
VIDEO_R1_NUMBER_TAIL = (
    " Please provide the numerical value (e.g., 42 or 3.14) within the <answer> </answer> tags."
)


def video_r1_choice_or_number(record: TaskRecord) -> str:
    """`make_conversation_image_and_video`: a multiple-choice question is the problem, then
    `Options:` and one `X. option` line each (no separator before `Options:`, as there)."""
    if isinstance(record.answer, TextAnswer):
        return VIDEO_R1_QUESTION.format(record.problem) + VIDEO_R1_TEXT_TAIL
    if isinstance(record.answer, NumericAnswer) or not record.options:
        return VIDEO_R1_QUESTION.format(record.problem) + VIDEO_R1_NUMBER_TAIL
    question = f"{record.problem}Options:\n{_options(record)}\n"
    return VIDEO_R1_QUESTION.format(question) + VIDEO_R1_CHOICE_TAIL


# The head TaRO's and OraRL's temporal-grounding instructions share; what a row that ships
# the whole instruction (TaRO's data/test.json, OraRL-Data written with its templates) holds.
_TG_INSTRUCTION = re.compile(
    r'^\s*(?:<video>\s*)?To accurately pinpoint the event "(.+?)" in the video, '
    r"determine the precise time period of the event\.",
    re.DOTALL,
)


def query_from_instruction(text: str) -> str | None:
    """The event query inside a published temporal-grounding instruction (TaRO's or OraRL's,
    `To accurately pinpoint the event "QUERY" in the video, ...`), else None: a row that
    carries its whole prompt still gets its query for TaRO's constructed reasoning
    (`I need to find the specific moment QUERY.`) and for de-duplication."""
    match = _TG_INSTRUCTION.match(text)
    return None if match is None else match.group(1).strip()


def published_prompt(record: TaskRecord, style: str) -> str | None:
    """The `style`'s published user text for `record`, or None: the family has no template
    in that style (its module's `published`), or none for this record."""
    template = record.family.task.published.get(style)
    return None if template is None else template(record)


# EasyR1's format prompts (jinja, rendered with `content` = the row's problem text). Its
# examples pair math.jinja with the `\boxed{}` reward (`examples/config.yaml`) and r1v.jinja
# with the `<answer>` reward (`examples/baselines/qwen2_5_vl_3b_clevr.sh`).
EASYR1_FORMAT_PROMPTS = {
    "math": (
        "{{ content | trim }} You FIRST think about the reasoning process as an internal "
        "monologue and then provide the final answer. The reasoning process MUST BE enclosed "
        "within <think> </think> tags. The final answer MUST BE put in \\boxed{}."
    ),
    "r1v": (
        "{{ content | trim }} A conversation between User and Assistant. The user asks a "
        "question, and the Assistant solves it. The assistant first thinks about the reasoning "
        "process in the mind and then provides the user with the answer. The reasoning process "
        "and answer are enclosed within <think> </think> and <answer> </answer> tags, "
        "respectively, i.e., <think> reasoning process here </think><answer> answer here "
        "</answer>"
    ),
}
FORMAT_PROMPT_NAMES = ("auto", *EASYR1_FORMAT_PROMPTS, "none")


def load_format_prompt(name: str) -> str | None:
    """`data.format_prompt` -> the jinja source to render (`auto` stays `auto`: chosen per
    family; `none`: None, the problem as given); a path names a `.jinja` file of the user's,
    as EasyR1's `data.format_prompt=./examples/format_prompt/r1v.jinja`."""
    if name == "none":
        return None
    if name == "auto" or name in EASYR1_FORMAT_PROMPTS:
        return name
    path = Path(name).expanduser()
    if not path.is_file():
        raise ConfigError(
            f"data.format_prompt={name!r} is neither one of {', '.join(FORMAT_PROMPT_NAMES)} "
            "nor a jinja file; give a path to an EasyR1 format prompt (e.g. r1v.jinja)"
        )
    return path.read_text(encoding="utf-8")


def easyr1_format_prompt(template: str | None, content: str, family: Family) -> str:
    """An EasyR1 row's prompt: `content` (its problem, placeholders kept) rendered in the
    format prompt as EasyR1's `RLHFDataset._build_messages` does (`Template(source.strip())
    .render(content=...)`). `auto` is the template EasyR1 pairs with the reward videorl scores
    the family by: `math` (a final `\\boxed{}`) for text math, `r1v` (`<think>` then
    `<answer>`) for the video families; None leaves `content` as given."""
    if template is None:
        return content
    if template == "auto":
        template = "r1v" if family.uses_video else "math"
    source = EASYR1_FORMAT_PROMPTS.get(template, template)
    try:
        import jinja2
    except ImportError:  # transformers' chat templates need it too
        raise ConfigError("data.format_prompt needs jinja2: pip install jinja2") from None
    return jinja2.Template(source.strip()).render(content=content)


# VideoAuto-R1's system prompt of `rl_mode=answer_twice_rl` (IVUL-KAUST/VideoAuto-R1
# videoauto_r1/utils/data_rl.py COT_SYSTEM_PROMPT_ANSWER_TWICE; the same text in
# lmms_eval/models/simple/qwen2_5_vl_autothink.py): `data.prompt_style: videoauto_r1`.
VIDEOAUTO_FALLBACK = "Let's analyze the problem step by step."
VIDEOAUTO_SYSTEM = (
    "You are a helpful assistant.\n"
    "FIRST: Output your initial answer inside the first \\boxed{...} without any analysis or "
    "explanations. If you cannot determine the answer without reasoning, output "
    f"\\boxed{{{VIDEOAUTO_FALLBACK}}} instead.\n"
    "THEN: Think through the reasoning as an internal monologue enclosed within "
    "<think>...</think>.\n"
    "AT LAST: Output the final answer again inside \\boxed{...}. If you believe the previous "
    "answer was correct, repeat it; otherwise, correct it.\n"
    "Output format: \\boxed{...}<think>...</think>\\boxed{...}"
)


def boxed_instruction(text: str) -> str:
    """A task instruction asking for `<answer>X</answer>`, asking for `\\boxed{X}` instead
    (VideoAuto-R1's answers are boxed; its system prompt states the two-answer order)."""
    return text.replace("<answer>", "\\boxed{").replace("</answer>", "}")


def style_system(style: str) -> str | None:
    """The system turn a prompt style brings (None: the chat template's default)."""
    return VIDEOAUTO_SYSTEM if style == "videoauto_r1" else None
