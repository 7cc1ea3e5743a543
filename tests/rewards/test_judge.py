"""The LLM judge of open-ended answers (`videorl.rewards.judge`, `reward.judge`) against a real
local server speaking the OpenAI chat API, called through the real `openai` client: verdicts,
every failure as a counted zero, the LongVT plug-in's overall with a judge, config errors.

The server's reply is scripted by the candidate answer the judge prompt carries; the `hang`
answer waits on an event released at teardown, so that the client's timeout always fires
first (no test depends on how long anything takes)."""

from __future__ import annotations

import asyncio
import socket
import threading
from typing import TYPE_CHECKING

import pytest

from tests.rewards.factories import make
from videorl.errors import ConfigError
from videorl.reduction import logged, summed
from videorl.rewards import RewardConfig, longvt_judge, score_response
from videorl.rewards.batch import score_batch
from videorl.rewards.calls import ToolCallMade
from videorl.rewards.config import JudgeConfig
from videorl.rewards.judge import JUDGE_FAILURES, judge, judge_prompt, parse_verdict
from videorl.rewards.longvt import score

pytest.importorskip("openai")
fastapi = pytest.importorskip("fastapi")
if TYPE_CHECKING:
    from fastapi import Request
else:  # FastAPI reads the annotation at run time
    Request = fastapi.Request

HANG = object()
# candidate answer -> the judge's reply: content text, an HTTP status, or HANG
SCRIPT = {
    "red": "1",
    "the red one": "Verdict: 0.5\nit names the colour but not the car",
    "blue": "0",
    "maybe": "I think the answer is mostly right.",
    "error": 500,
    "hang": HANG,
    "empty": "",
    # LongVT's reading (style: longvt): lenient after a Judgement: label, exact without
    "lv-ten": "Judgement: 10",
    "lv-reasoned": "Both name the colour.\nJudgement: 0.5",
    "lv-bare": "1.0",
    "lv-first-line": "0.5\nJudgement: 1",
}
QUESTION, REFERENCE = "What colour is the car by the gate?", "The car by the gate is red."
SERVED_MODEL = "scripted-judge"


class JudgeServer:
    """A FastAPI app on 127.0.0.1 (any free port) answering `/v1/models` and
    `/v1/chat/completions` from `SCRIPT`; it records each chat request."""

    def __init__(self) -> None:
        from fastapi.responses import JSONResponse

        from videorl.serve.app import ServerThread

        self.release = threading.Event()
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        app = fastapi.FastAPI()

        @app.get("/v1/models")
        def models() -> dict:
            return {"object": "list", "data": [{"id": SERVED_MODEL, "object": "model"}]}

        @app.post("/v1/chat/completions")
        async def chat(request: Request):
            body = await request.json()
            self.requests.append(body)
            self.headers.append(dict(request.headers))
            content = body["messages"][-1]["content"]
            marker = "[Model_answer] : " if "[Model_answer] : " in content else "Candidate: "
            candidate = content.rsplit(marker, 1)[1]
            reply = SCRIPT[candidate.split("\n", 1)[0]]
            if reply is HANG:
                await asyncio.to_thread(self.release.wait)
                reply = "1"
            if isinstance(reply, int):
                return JSONResponse({"error": {"message": "scripted failure"}}, status_code=reply)
            return {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": reply},
                        "finish_reason": "stop",
                    }
                ],
            }

        self.thread = ServerThread(app, "127.0.0.1", 0)
        self.url = self.thread.url


@pytest.fixture(scope="module")
def server():
    judge_server = JudgeServer()
    with judge_server.thread:
        yield judge_server
        judge_server.release.set()  # let a hung request finish before the server stops


def config(url: str, **fields) -> JudgeConfig:
    return JudgeConfig(url=url, **{"model": "judge-7b", "max_retries": 0, **fields})


def closed_port_url() -> str:
    """The URL of a port that nothing listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@pytest.mark.parametrize("answer, expected", [("red", 1.0), ("the red one", 0.5), ("blue", 0.0)])
def test_the_judge_s_verdict_is_the_score(server, answer, expected):
    verdict = judge(config(server.url), QUESTION, REFERENCE, answer)
    assert (verdict.score, verdict.failure) == (expected, None)
    assert verdict.counters() == {
        "judge/calls": 1.0,
        **{f"judge/failed_{reason}": 0.0 for reason in JUDGE_FAILURES},
    }


def test_the_request_carries_the_prompt_model_temperature_and_token_bound(server):
    monkey = pytest.MonkeyPatch()
    monkey.setenv("VIDEORL_TEST_JUDGE_KEY", "secret-123")
    try:
        cfg = config(server.url, api_key_env="VIDEORL_TEST_JUDGE_KEY", max_tokens=5)
        judge(cfg, QUESTION, REFERENCE, "red")
    finally:
        monkey.undo()
    body, headers = server.requests[-1], server.headers[-1]
    assert body["model"] == "judge-7b"
    assert body["temperature"] == 0.3 and body["max_tokens"] == 5
    assert body["messages"][-1]["content"] == judge_prompt(QUESTION, REFERENCE, "red")
    assert headers["authorization"] == "Bearer secret-123"


def test_without_a_model_the_first_model_the_server_lists_is_asked(server):
    verdict = judge(config(server.url, model=None), QUESTION, REFERENCE, "red")
    assert verdict.score == 1.0
    assert server.requests[-1]["model"] == SERVED_MODEL
    assert server.headers[-1]["authorization"] == "Bearer EMPTY"


@pytest.mark.parametrize(
    "answer, reason",
    [("maybe", "unparsed"), ("empty", "unparsed"), ("error", "http_error"), ("hang", "timeout")],
)
def test_a_failed_judgement_scores_zero_with_its_reason(server, answer, reason):
    verdict = judge(config(server.url, timeout_s=0.5), QUESTION, REFERENCE, answer)
    assert (verdict.score, verdict.failure) == (0.0, reason)
    assert verdict.counters()[f"judge/failed_{reason}"] == 1.0
    assert sum(verdict.counters().values()) == 2.0  # called, and this one failure


def test_an_unreachable_judge_scores_zero():
    verdict = judge(config(closed_port_url()), QUESTION, REFERENCE, "red")
    assert (verdict.score, verdict.failure) == (0.0, "unreachable")


@pytest.mark.parametrize(
    "reply, expected",
    [
        ("1", 1.0),
        (" 0.5 ", 0.5),
        ("0", 0.0),
        ("1.0", 1.0),
        ("Verdict: 0", 0.0),
        ("judgement: .5\nbecause", 0.5),
        ("0.5\n1", 0.5),  # only the first line is read
        ("1 (fully consistent)", None),
        ("0.75", None),
        ("yes", None),
        ("", None),
        (None, None),
        ("\n\n1", 1.0),
        ("x" * 10_000 + "\n1", None),
    ],
)
def test_verdicts_are_read_strictly(reply, expected):
    assert parse_verdict(reply) == expected


def test_the_prompt_is_our_own_and_asks_for_one_of_three_verdicts():
    prompt = judge_prompt(QUESTION, REFERENCE, "red")
    assert prompt.endswith(
        f"Question: {QUESTION}\nReference: {REFERENCE}\nCandidate: red\nVerdict:"
    )
    assert "1, 0.5 or 0" in prompt
    assert "[Standard Answer]" not in prompt  # LongVT's template is not copied


# ----- style: longvt (LongVT's custom_rewards/vl_agent.py) --------------------------------

# sha256 of LongVT's own get_prompt("tan", "The countertop is tan.", "Is it tan?"), computed
# by running vl_agent.py's get_chat_template, get_gpt4_score_ICE and get_prompt at 08d755b.
LONGVT_PROMPT_SHA256 = "d4c08aad8f11eaed16a3b0b3cecde09d44769d9293cb30e5a7249bc2a7e1584a"


def test_longvt_prompt_is_longvt_s_byte_for_byte():
    import hashlib

    prompt = longvt_judge.prompt("Is it tan?", "The countertop is tan.", "tan")
    assert hashlib.sha256(prompt.encode()).hexdigest() == LONGVT_PROMPT_SHA256
    assert prompt.count("Judgement:") == 8  # seven examples and the answer's
    assert prompt.endswith(
        "\n[Question]: Is it tan?\n[Standard Answer]: The countertop is tan.\n"
        "[Model_answer] : tan\nJudgement:"
    )


@pytest.mark.parametrize(
    "reply, longvt, videorl",
    [
        ("1", 1.0, 1.0),
        (" 0.5\n", 0.5, 0.5),
        ("0", 0.0, 0.0),
        ("1.0", None, 1.0),  # no label: only the exact 1, 0.5, 0
        ("Verdict: 0", None, 0.0),
        ("Judgement: 10", 1.0, None),  # after the label, "1" in the text is 1
        ("Judgement: 0.1", 1.0, None),
        ("Judgement: 0.5", 0.5, 0.5),
        ("Judgement: none", None, None),
        ("Judgement: 1\nJudgement: 0", 0.0, 1.0),  # the text after the last label
        ("Both agree.\nJudgement: 0.5", 0.5, None),
        ("0.5\nJudgement: 1", 1.0, 0.5),
        ("", None, None),
        (None, None, None),
    ],
)
def test_longvt_reads_the_reply_as_vl_agent_py(reply, longvt, videorl):
    assert longvt_judge.parse(reply) == longvt
    assert parse_verdict(reply) == videorl


def test_longvt_style_sends_its_prompt_system_turn_and_seed(server):
    cfg = config(server.url, style="longvt", max_tokens=None)
    verdict = judge(cfg, QUESTION, REFERENCE, "lv-ten")
    assert (verdict.score, verdict.failure) == (1.0, None)
    body = server.requests[-1]
    assert body["messages"] == [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": longvt_judge.prompt(QUESTION, REFERENCE, "lv-ten")},
    ]
    assert body["temperature"] == 0.3 and "max_tokens" not in body
    assert isinstance(body["seed"], int) and 0 <= body["seed"] <= 1_000_000
    videorl_body = (judge(config(server.url), QUESTION, REFERENCE, "red"), server.requests[-1])
    assert "seed" not in videorl_body[1] and videorl_body[1]["max_tokens"] == 16


@pytest.mark.parametrize(
    "answer, longvt, videorl",
    [("lv-reasoned", 0.5, None), ("lv-bare", None, 1.0), ("lv-first-line", 1.0, 0.5)],
)
def test_scripted_judge_replies_score_by_style(server, answer, longvt, videorl):
    for style, expected in (("longvt", longvt), ("videorl", videorl)):
        verdict = judge(config(server.url, style=style), QUESTION, REFERENCE, answer)
        if expected is None:
            assert (verdict.score, verdict.failure) == (0.0, "unparsed"), style
        else:
            assert (verdict.score, verdict.failure) == (expected, None), style


def test_judge_style_and_token_limit_are_checked():
    with pytest.raises(ConfigError, match="style='gpt'"):
        JudgeConfig(style="gpt")  # type: ignore[arg-type]  # a bad value on purpose
    with pytest.raises(ConfigError, match="max_tokens"):
        JudgeConfig(max_tokens=0)
    assert JudgeConfig(max_tokens=None).max_tokens is None


# ----- the LongVT plug-in with a judge -----------------------------------------------------

PLUGIN = "videorl.rewards.longvt:score"
FINAL = "<think>the car is red</think>\n<answer>{}</answer>"
SEGMENT = [10.0, 20.0]


def open_record():
    return make(
        "video_qa",
        {"text": REFERENCE},
        problem=QUESTION,
        extra={"video_segment": SEGMENT},
    )


def reward_config(url: str, **judge_fields) -> RewardConfig:
    """In-process scoring with LongVT's plug-in for video QA and the judge at `url`."""
    judge_config = config(url, timeout_s=0.5, **judge_fields)
    return RewardConfig(
        num_workers=1, timeout_s=5.0, plugins={"video_qa": PLUGIN}, judge=judge_config
    )


def crop(start, end):
    return ToolCallMade("crop_video", {"start_time": start, "end_time": end}, turn=1)


def test_the_longvt_plug_in_takes_accuracy_from_the_judge(server):
    cfg = reward_config(server.url)
    calls = (crop(12, 22),)  # IoU 8 / 12 with the segment
    half = score(open_record(), FINAL.format("the red one"), cfg, calls)
    assert half["task"] == 0.5 and half["format"] == 1.0
    assert half["time_iou"] == pytest.approx(8 / 12)
    assert half["overall"] == pytest.approx((0.5 + 1.0 + 8 / 12) / 3)
    assert half["counters"]["judge/calls"] == 1.0
    full = score(open_record(), FINAL.format("red"), cfg)
    assert (full["task"], full["overall"]) == (1.0, pytest.approx(2 / 3))


def test_a_judge_failure_costs_accuracy_only_and_is_counted(server):
    cfg = reward_config(server.url)
    parts = score(open_record(), FINAL.format("hang"), cfg)
    assert (parts["task"], parts["format"]) == (0.0, 1.0)
    assert parts["counters"]["judge/failed_timeout"] == 1.0
    records = [open_record()] * 4
    responses = [FINAL.format(a) for a in ("red", "maybe", "error", "")]
    batch = score_batch(records, responses, cfg)
    assert [r.components["task"] for r in batch.results] == [1.0, 0.0, 0.0, 0.0]
    assert all(r.error is None for r in batch.results)  # no sample failed: format still counts
    metrics = logged(batch.metrics)
    assert metrics["reward/judge/calls"] == 3.0  # the empty answer is not sent
    assert metrics["reward/judge/failed_unparsed"] == 1.0
    assert metrics["reward/judge/failed_http_error"] == 1.0
    assert metrics["reward/judge/failed_timeout"] == 0.0
    assert metrics["reward/failed_exception"] == 0.0


def test_an_unreachable_judge_never_fails_the_step():
    cfg = reward_config(closed_port_url())
    result = score_response(open_record(), FINAL.format("red"), cfg, (crop(10, 20),))
    assert result.error is None
    assert result.components["task"] == 0.0 and result.components["time_iou"] == 1.0
    assert result.counters["judge/failed_unreachable"] == 1.0
    assert not any(key.startswith("judge/") for key in result.components)  # not reward terms


def test_choice_records_and_runs_without_a_judge_score_as_before(server):
    choice = make("video_qa", {"letter": "B"}, extra={"video_segment": SEGMENT})
    with_judge = score(choice, FINAL.format("B"), reward_config(server.url))
    assert with_judge["task"] == 1.0 and with_judge["counters"]["judge/calls"] == 0.0
    plain = score(choice, FINAL.format("B"), RewardConfig(num_workers=1))
    assert set(plain) == {"format", "task", "time_iou", "overall"}
    # open-ended without a judge: the normalised exact text
    no_judge = RewardConfig(num_workers=1)
    assert (
        score(open_record(), FINAL.format(" the car by the GATE is red "), no_judge)["task"] == 1.0
    )
    assert score(open_record(), FINAL.format("red"), no_judge)["task"] == 0.0
    batch = score_batch([choice], [FINAL.format("B")], no_judge)
    assert not any(key.startswith("reward/judge/") for key in batch.metrics)


def test_the_judge_is_asked_from_the_scoring_pool_s_workers(server):
    cfg = RewardConfig.from_dict(
        {
            "num_workers": 2,
            "timeout_s": 5.0,
            "plugins": {"video_qa": PLUGIN},
            "judge": {"url": server.url, "model": "judge-7b", "max_retries": 0, "timeout_s": 2},
        }
    )
    records = [open_record()] * 3
    responses = [FINAL.format(a) for a in ("red", "the red one", "blue")]
    batch = score_batch(records, responses, cfg)
    assert [r.components["task"] for r in batch.results] == [1.0, 0.5, 0.0]
    assert batch.metrics["reward/judge/calls"] == summed(3.0)


# ----- configuration -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "judge_section, message",
    [
        (
            {"url": "ftp://judge:21/v1"},
            "reward.judge.url='ftp://judge:21/v1' is not an http(s) URL",
        ),
        ({"url": "localhost:8000"}, "reward.judge.url='localhost:8000' is not an http(s) URL"),
        ({"url": "http://h/v1", "temperature": 3}, "reward.judge.temperature=3.0 is invalid"),
        ({"url": "http://h/v1", "max_tokens": 0}, "reward.judge.max_tokens=0 is invalid"),
        ({"url": "http://h/v1", "timeout_s": 0}, "reward.judge.timeout_s=0.0 is invalid"),
        ({"url": "http://h/v1", "max_retries": -1}, "reward.judge.max_retries=-1 is invalid"),
        (
            {"url": "http://h/v1", "api_key_env": "sk-abc123"},
            "reward.judge.api_key_env: not an environment variable name",
        ),
        (
            {"url": "http://h/v1", "api_key_env": "VIDEORL_TEST_UNSET_KEY"},
            "reward.judge.api_key_env: the environment variable VIDEORL_TEST_UNSET_KEY is not set",
        ),
        ({"url": "http://h/v1", "timeout_s": 5}, "reward.timeout_s=5 is not above the judge's"),
    ],
)
def test_config_errors_are_one_line_naming_the_key(monkeypatch, judge_section, message):
    monkeypatch.delenv("VIDEORL_TEST_UNSET_KEY", raising=False)
    with pytest.raises(ConfigError) as error:
        RewardConfig.from_dict({"judge": judge_section})
    text = str(error.value)
    assert text.startswith(message), text
    assert "\n" not in text
    assert "sk-abc123" not in text  # a key pasted by mistake is never echoed


def test_the_default_is_no_judge():
    cfg = RewardConfig.from_dict({})
    assert not cfg.judge.enabled
    judged = {"timeout_s": 100, "judge": {"url": "https://judge.example/v1"}}
    assert RewardConfig.from_dict(judged).judge.enabled


def test_the_judge_is_shown_longvt_s_bare_question_when_the_record_has_one(server):
    # a verl row's problem is its whole user turn; LongVT's judge sees `extra_info.question`
    record = make(
        "video_qa",
        {"text": REFERENCE},
        problem=f"{QUESTION} Think first, call crop_video if needed, then answer.",
        extra={"question": QUESTION, "video_segment": SEGMENT},
    )
    score(record, FINAL.format("red"), reward_config(server.url))
    assert server.requests[-1]["messages"][-1]["content"] == judge_prompt(
        QUESTION, REFERENCE, "red"
    )
