"""`videorl serve` as the LLM judge (`reward.judge`): a tiny model's reply goes through the real
client, the model listing and the strict verdict reading; a random model's words are no
verdict (counted as `unparsed`), never an error."""

from __future__ import annotations

import pytest

from videorl.rewards.config import JudgeConfig
from videorl.rewards.judge import judge

pytest.importorskip("openai")


def test_a_served_model_judges_through_the_openai_api(server):
    # model null: the judge asks the first model the server lists ("tiny"), as LongVT does;
    # max_tokens within the server's limit (conftest: 8)
    config = JudgeConfig(url=server.url, max_tokens=4, timeout_s=120, max_retries=0)
    verdict = judge(config, "What colour is the square?", "It is red.", "red")
    assert verdict.failure in (None, "unparsed"), verdict.detail
    assert verdict.score in (0.0, 0.5, 1.0)
    if verdict.failure is not None:
        assert verdict.score == 0.0 and "not 1, 0.5 or 0" in verdict.detail
    # a request the server refuses (more tokens than it allows) is an HTTP error, scored 0
    refused = judge(
        JudgeConfig(url=server.url, model="tiny", max_tokens=64, timeout_s=120, max_retries=0),
        "q",
        "a",
        "b",
    )
    assert (refused.score, refused.failure) == (0.0, "http_error")
