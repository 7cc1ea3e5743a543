r"""LongVT's LLM-judge prompt and reply parsing (`reward.judge.style: longvt`,
docs/tools.md#an-llm-judge-for-open-ended-answers).

Source: EvolvingLMMs-Lab/LongVT at 08d755b, `custom_rewards/vl_agent.py`: `get_chat_template`
(lines 47-71), `get_gpt4_score_ICE` (lines 74-124, seven examples), `get_prompt` (lines
204-217), and the request and reply handling in `compute_score` (lines 288-325). The texts
are LongVT's, byte for byte (trailing spaces included), since a judge model answers the
prompt it is given; the code around them is ours. The prompt is the template, each example
followed by two newlines, then the answer's block:
`\n[Question]: q\n[Standard Answer]: ref\n[Model_answer] : answer\nJudgement:`.

The reply, stripped: after a `Judgement:` label, the text after the last label scores 1 if
it contains `1`, else 0.5 if it contains `0.5`, else 0 if it contains `0`; without the label
only the exact replies `1`, `0.5` and `0` score. Anything else has no verdict (LongVT prints
a warning and scores 0; ours scores 0 and counts it, `judge/failed_unparsed`).
"""

from __future__ import annotations

SYSTEM = "You are a helpful assistant."
LABEL = "Judgement:"

TEMPLATE = (
    "\n"
    "Below are two answers to a question. Question is [Question], [Standard Answer] is the standard answer to the question, \n"
    "and [Model_answer] is the answer extracted from a model's output to this question. \n"
    "\n"
    "Judge how consistent the two answers are.\n"
    "\n"
    "Scoring rules  \n"
    "• 1    — Fully consistent: they convey the same meaning (e.g., “pink” vs. “it is pink”).  \n"
    "• 0.5 — Partially consistent: they overlap on some key points but not all.  \n"
    "• 0    — Inconsistent: they conflict or share no essential overlap.\n"
    "\n"
    "Output **only** one of the following numbers: 1, 0.5, or 0.\n"
)

EXAMPLES: tuple[str, ...] = (
    (
        "\n"
        "[Question]: Is the countertop tan or blue?\n"
        "[Standard Answer]: The countertop is tan.\n"
        "[Model_answer] : tan\n"
        "Judgement: 1\n"
    ),
    (
        "\n"
        "[Question]: On which side of the picture is the barrier?\n"
        "[Standard Answer]: The barrier is on the left side of the picture.\n"
        "[Model_answer] : left\n"
        "Judgement: 1\n"
    ),
    (
        "\n"
        "[Question]: What happens immediately after the fireworks illuminate the sky?\n"
        "[Standard Answer]: The crowd cheers loudly and waves flags.\n"
        "[Model_answer] : The crowd cheers.\n"
        "Judgement: 0.5\n"
    ),
    (
        "\n"
        "[Question]: What items does the waitress hand to the customer?\n"
        "[Standard Answer]: She hands over a sandwich and a cup of coffee.\n"
        "[Model_answer] : She hands over a sandwich and a cup of tea.\n"
        "Judgement: 0.5\n"
    ),
    (
        "\n"
        "[Question]: Where is the cat sitting when the dog first walks into the kitchen?\n"
        "[Standard Answer]: On top of the kitchen counter.\n"
        "[Model_answer] : In the kitchen, sitting on the floor near the counter.\n"
        "Judgement: 0.5\n"
    ),
    (
        "\n"
        "[Question]: Is the man phone both blue and closed?\n"
        "[Standard Answer]: Yes, the man phone is both blue and closed.\n"
        "[Model_answer] : No.\n"
        "Judgement: 0\n"
    ),
    (
        "\n"
        "[Question]: What color is the towel in the center of the picture?\n"
        "[Standard Answer]: The towel in the center of the picture is blue.\n"
        "[Model_answer] : The towel in the center of the picture is pink.\n"
        "Judgement: 0\n"
    ),
)


def prompt(question: str, reference: str, answer: str) -> str:
    """`get_prompt(answer, reference, question)`: the template, the seven examples, then
    this answer's block ending in `Judgement:`."""
    demo = TEMPLATE + "".join(example + "\n\n" for example in EXAMPLES)
    test = (
        f"\n[Question]: {question}\n[Standard Answer]: {reference}\n"
        f"[Model_answer] : {answer}\nJudgement:"
    )
    return demo + test


def parse(reply: str | None) -> float | None:
    """LongVT's reading of a reply: 1.0, 0.5, 0.0, or None without a verdict."""
    if not isinstance(reply, str):
        return None
    text = reply.strip()
    if LABEL in text:
        tail = text.split(LABEL)[-1].strip()
        for needle, score in (("1", 1.0), ("0.5", 0.5), ("0", 0.0)):
            if needle in tail:
                return score
        return None
    return {"1": 1.0, "0.5": 0.5, "0": 0.0}.get(text)
