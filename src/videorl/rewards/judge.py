"""An LLM judge for open-ended answers (`reward.judge`, docs/fidelity.md#longvt-configslongvtyaml).

LongVT (`custom_rewards/vl_agent.py`) scores the accuracy of an open-ended answer by asking a
chat model served behind an OpenAI-compatible endpoint whether the answer agrees with the
reference: 1 (the same meaning), 0.5 (partly) or 0 (not), at temperature 0.3. Two styles
(`reward.judge.style`):

- `videorl`: a prompt of our own (the same three-way protocol, examples of each verdict),
  read strictly: the first line, after an optional `Verdict:` label, must be one of the
  verdicts; the rest of the reply is ignored;
- `longvt`: LongVT's prompt, system turn and random seed, and its lenient reading of the
  reply (`rewards/longvt_judge.py`).

At most `max_tokens` are asked for (null: no limit).

A judge never fails a step: a server that cannot be reached, a request that times out, an
HTTP error or a reply that is not a verdict scores 0 with its reason (`JUDGE_FAILURES`),
which the plug-in puts in its result's counters (`judge/failed_<reason>`, beside
`judge/calls`) and the step sums as `reward/judge/failed_<reason>` (`rewards/batch.py`). One client per process (the scoring
pool's workers each build theirs), made on first use.
"""

from __future__ import annotations

import logging
import os
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from videorl.rewards import longvt_judge
from videorl.rewards.config import JudgeConfig

# Why a judged answer scored 0 without a verdict; each is counted as
# `reward/judge/failed_<reason>`.
JUDGE_FAILURES = ("unreachable", "timeout", "http_error", "unparsed")
FAILED_PREFIX = "judge/failed_"  # counter keys: `judge/calls`, `judge/failed_<reason>`
CALLS = "judge/calls"
REPLY_CHARS = 200  # the most of a reply read (and quoted in a failure's detail)
NO_KEY = "EMPTY"  # the key sent without api_key_env (what LongVT sends to its vLLM server)

_VERDICTS = {"1": 1.0, "1.0": 1.0, "0.5": 0.5, ".5": 0.5, "0": 0.0, "0.0": 0.0}
_LABEL = re.compile(r"^(?:verdict|judgement|judgment|score)\s*:\s*", re.IGNORECASE)

SYSTEM = "You grade answers to questions about videos. Reply with a single number."

# Our own wording of LongVT's protocol (1 / 0.5 / 0 with examples of each).
INSTRUCTIONS = """\
You will see a question about a video, the reference answer, which is correct, and a
candidate answer written by a student. Decide how well the candidate agrees with the reference.

Verdicts:
1   - the candidate says what the reference says; wording, length and form do not matter.
0.5 - the candidate gets part of the reference right but misses or changes something essential.
0   - the candidate contradicts the reference, answers something else, or is empty of content.

Examples:
Question: What colour is the car parked by the gate?
Reference: The car by the gate is red.
Candidate: red
Verdict: 1

Question: Which hand does the chef hold the knife in?
Reference: She holds the knife in her left hand.
Candidate: The left one.
Verdict: 1

Question: What does the boy do after he drops the ball?
Reference: He picks it up and throws it to his sister.
Candidate: He picks the ball up.
Verdict: 0.5

Question: What is on the plate the waiter brings?
Reference: A slice of cake and two strawberries.
Candidate: A slice of pie and two strawberries.
Verdict: 0.5

Question: Is the door open when the woman enters?
Reference: No, it is closed.
Candidate: Yes.
Verdict: 0

Question: How many birds land on the fence?
Reference: Three birds.
Candidate: Five birds land on the fence.
Verdict: 0

Reply with the verdict only: 1, 0.5 or 0.
"""

log = logging.getLogger(__name__)


def judge_prompt(question: str, reference: str, answer: str) -> str:
    """The user turn sent to the judge."""
    return (
        f"{INSTRUCTIONS}\nQuestion: {question.strip()}\nReference: {reference.strip()}\n"
        f"Candidate: {answer.strip()}\nVerdict:"
    )


def parse_verdict(reply: str | None) -> float | None:
    """1.0, 0.5 or 0.0 from the reply's first line (`1`, `0.5`, `0`, `1.0`, `0.0`, `.5`,
    after an optional `Verdict:` / `Judgement:` / `Score:` label); None for anything else."""
    if not reply:
        return None
    lines = reply[:REPLY_CHARS].strip().splitlines()
    if not lines:
        return None
    head = _LABEL.sub("", lines[0].strip()).strip()
    return _VERDICTS.get(head)


@dataclass(frozen=True)
class Verdict:
    """The judge's score of one answer; `failure` (one of `JUDGE_FAILURES`) and `detail` when
    there was no verdict (the score is then 0)."""

    score: float
    failure: str | None = None
    detail: str = ""

    def counters(self) -> dict[str, float]:
        """`judge/calls` 1 and `judge/failed_<reason>` (1 for this verdict's failure, else 0)."""
        return {CALLS: 1.0} | {
            f"{FAILED_PREFIX}{reason}": float(reason == self.failure) for reason in JUDGE_FAILURES
        }


def not_called() -> dict[str, float]:
    """The judge's counters of a row it did not score (an empty answer, a choice record)."""
    return {CALLS: 0.0} | {f"{FAILED_PREFIX}{reason}": 0.0 for reason in JUDGE_FAILURES}


def _failed(reason: str, detail: str) -> Verdict:
    if reason not in JUDGE_FAILURES:
        raise ValueError(f"judge failure {reason!r} is not one of {JUDGE_FAILURES}")
    if reason not in _warned:  # once per reason and process: a dead judge fails every row
        _warned.add(reason)
        log.warning("LLM judge: %s (%s); such answers score 0", reason, detail)
    return Verdict(0.0, reason, detail[:300])


_warned: set[str] = set()
_clients: dict[JudgeConfig, tuple[Any, str | None]] = {}


def _openai() -> Any:
    try:
        import openai
    except ImportError:
        raise RuntimeError(
            "reward.judge needs the openai package; install the judge extra: "
            "pip install 'videorl[judge]'"
        ) from None
    return openai


def _client(config: JudgeConfig) -> tuple[Any, str | None]:
    """This process's client for `config` and the model it asks (None: not yet resolved)."""
    if config not in _clients:
        openai = _openai()
        key = os.environ.get(config.api_key_env, "") if config.api_key_env else NO_KEY
        client = openai.OpenAI(
            base_url=config.url,
            api_key=key or NO_KEY,
            timeout=config.timeout_s,
            max_retries=config.max_retries,
        )
        _clients[config] = (client, config.model)
    return _clients[config]


def _model(config: JudgeConfig, client: Any, model: str | None) -> str:
    """`config.model`, else the first model the server lists (LongVT's `GET /models`)."""
    if model is not None:
        return model
    listed = client.models.list()
    first = next(iter(listed.data), None)
    if first is None:
        raise LookupError("the judge server lists no model; set reward.judge.model")
    _clients[config] = (client, first.id)
    return str(first.id)


@dataclass(frozen=True)
class Style:
    """What a style sends and how it reads the reply: the system turn, the user turn of
    (question, reference, answer), the reader (None: no verdict), whether a random seed is
    sent, and how much of the reply is read (None: all of it)."""

    system: str
    prompt: Callable[[str, str, str], str]
    parse: Callable[[str | None], float | None]
    seeded: bool
    reply_chars: int | None


STYLES = {
    "videorl": Style(SYSTEM, judge_prompt, parse_verdict, False, REPLY_CHARS),
    "longvt": Style(longvt_judge.SYSTEM, longvt_judge.prompt, longvt_judge.parse, True, None),
}


def _request(config: JudgeConfig, question: str, reference: str, answer: str) -> dict[str, Any]:
    """The chat request's arguments but the model."""
    style = STYLES[config.style]
    request: dict[str, Any] = {
        "messages": [
            {"role": "system", "content": style.system},
            {"role": "user", "content": style.prompt(question, reference, answer)},
        ],
        "temperature": config.temperature,
    }
    if config.max_tokens is not None:
        request["max_tokens"] = config.max_tokens
    if style.seeded:  # LongVT: seed=random.randint(0, 1000000) per request
        request["seed"] = random.randint(0, 1_000_000)
    return request


def judge(config: JudgeConfig, question: str, reference: str, answer: str) -> Verdict:
    """Ask the judge how well `answer` agrees with `reference`; never raises."""
    if config.url is None:
        raise ValueError("reward.judge.url is not set: there is no judge to ask")
    try:
        openai = _openai()
    except RuntimeError as exc:
        return _failed("unreachable", str(exc))
    try:
        client, model = _client(config)
        reply = client.chat.completions.create(
            model=_model(config, client, model),
            **_request(config, question, reference, answer),
        )
    except openai.APITimeoutError:
        return _failed("timeout", f"no reply from {config.url} within {config.timeout_s:g} s")
    except openai.APIConnectionError as exc:
        return _failed("unreachable", f"{config.url}: {exc}")
    except openai.APIStatusError as exc:
        return _failed("http_error", f"{config.url}: HTTP {exc.status_code}")
    except Exception as exc:  # noqa: BLE001 - a malformed response, a missing model: one row
        return _failed("http_error", f"{config.url}: {type(exc).__name__}: {exc}")
    try:
        content = reply.choices[0].message.content
    except (AttributeError, IndexError, TypeError):
        content = None
    style = STYLES[config.style]
    text = content[: style.reply_chars] if isinstance(content, str) else None
    score = style.parse(text)
    if score is None:
        quoted = None if text is None else text[:REPLY_CHARS]
        return _failed("unparsed", f"the judge replied {quoted!r}, not 1, 0.5 or 0")
    return Verdict(score)
