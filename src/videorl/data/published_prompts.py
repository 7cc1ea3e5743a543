"""Published prompt styles: which family template applies (`published_prompt`), EasyR1's
format prompts, VideoAuto-R1's system turn and the TaRO/OraRL instruction head.

The templates themselves live with their family (`tasks/<family>/prompts.py`, the shared
choice-or-number ones in `tasks/choice_prompts.py`), verbatim: `orarl` (OraRL's
`eval/task/eval_prompt.py`, byte-aligned with its training data), `taro` (TaRO's
temporal-grounding prompt, its `data/train.json` / `data/test.json`) and `video_r1`
(Video-R1's `QUESTION_TEMPLATE` + `TYPE_TEMPLATE`, `src/r1-v/src/open_r1/grpo.py`).
`published_prompt(record, style)` returns the user text, or None where the style has no
template for the family (the caller then uses videorl's own). OraRL's prompts ask for the
answer alone (its recipe trains answer-only); TaRO's asks for `<think>` reasoning and an
answer `S.SSs to E.EEs`. Coordinates are not stated in OraRL's prompts: the model answers
in its native convention (`data.coordinates`).

EasyR1's format prompts (`easyr1_format_prompt`, hiyouga/EasyR1
`examples/format_prompt/{math,r1v}.jinja`) wrap an EasyR1 row's `problem` at load time.
"""

from __future__ import annotations

import re
from pathlib import Path

from videorl.data.families import Family
from videorl.data.records import TaskRecord
from videorl.errors import ConfigError

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
