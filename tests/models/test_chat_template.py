"""Thinking mode end to end: `enable_thinking` reaches the chat template (data.think, or
data.chat_template_kwargs), and a template that opens `<think>` still passes the format check."""

from __future__ import annotations

import pytest
import torch

from tests.models.test_tiny import fake_video
from videorl.config import DataConfig
from videorl.data.records import record_from_dict
from videorl.errors import ConfigError
from videorl.models.chat_template import check_template_kwargs, template_kwargs
from videorl.models.loading import load_model
from videorl.models.tiny import CHAT_TEMPLATE
from videorl.rewards.config import RewardConfig
from videorl.rewards.router import score_response
from videorl.rollout.prompting import encode_record

# Qwen3.5's generation prompt: thinking opens the block, non-thinking writes an empty one.
GENERATION = "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
QWEN35_LIKE = CHAT_TEMPLATE.replace(
    GENERATION,
    "{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n"
    "{% else %}<think>\n{% endif %}{% endif %}",
)
RECORD = record_from_dict(
    {
        "id": "tg-1",
        "family": "temporal_grounding",
        "problem": "the square turns red",
        "video": {"path": "clip.mp4"},
        "duration": 8.0,
        "answer": {"windows": [[2.0, 6.0]]},
    }
)


@pytest.fixture(scope="module")
def thinking_model(tiny_model_dir):
    assert GENERATION in CHAT_TEMPLATE
    loaded = load_model(tiny_model_dir("qwen3_5"))
    loaded.processor.chat_template = QWEN35_LIKE
    loaded.tokenizer.chat_template = QWEN35_LIKE
    return loaded


def _prompt_tail(loaded, think, extra=None):
    encoding = encode_record(loaded, RECORD, fake_video(), think, extra)
    return loaded.tokenizer.decode(encoding.source.token_ids)[-40:]


def test_enable_thinking_follows_think(thinking_model):
    assert _prompt_tail(thinking_model, True).endswith("assistant\n<think>\n")
    assert _prompt_tail(thinking_model, False).endswith("assistant\n<think>\n\n</think>\n\n")


def test_chat_template_kwargs_win_over_think(thinking_model):
    tail = _prompt_tail(thinking_model, True, {"enable_thinking": False})
    assert tail.endswith("<think>\n\n</think>\n\n")
    assert template_kwargs(True, {"enable_thinking": False}) == {"enable_thinking": False}


@pytest.mark.parametrize("think_required", [False, True])
def test_response_inside_an_opened_think_block_passes(thinking_model, think_required):
    assert _prompt_tail(thinking_model, True).endswith("<think>\n")
    response = "The square is red from 2 s to 6 s.\n</think>\n\n<answer>2 to 6</answer>"
    result = score_response(RECORD, response, RewardConfig(think_required=think_required))
    assert result.components["format"] == 1.0 and result.overall == pytest.approx(1.0)


def test_text_only_template_gets_the_kwargs(tiny_model_dir):
    loaded = load_model(tiny_model_dir("qwen3"))
    loaded.tokenizer.chat_template = QWEN35_LIKE
    math = record_from_dict(
        {"id": "m-1", "family": "math", "problem": "1 + 1?", "answer": {"text": "2"}}
    )
    encoding = encode_record(loaded, math, None, False)
    assert loaded.tokenizer.decode(encoding.input_ids).endswith("<think>\n\n</think>\n\n")


@pytest.mark.parametrize(
    "value, message",
    [
        ([1], "must be a mapping"),
        ({"enable_thinking": [1]}, "data.chat_template_kwargs.enable_thinking"),
        ({"1bad": True}, "not a template variable name"),
    ],
)
def test_bad_template_kwargs_name_the_key(value, message):
    with pytest.raises(ConfigError, match=message):
        check_template_kwargs(value)


def test_data_config_validates_template_kwargs():
    assert DataConfig(chat_template_kwargs={"enable_thinking": False}).chat_template_kwargs == {
        "enable_thinking": False
    }
    with pytest.raises(ConfigError, match="data.chat_template_kwargs"):
        DataConfig(chat_template_kwargs={"x": {"nested": 1}})


def test_endpoint_requests_carry_enable_thinking():
    from videorl.eval.openai_backend import chat_request
    from videorl.serve.chat import ChatService
    from videorl.serve.schema import ChatRequest, RequestError

    body = chat_request(RECORD, None, model="m", max_tokens=8)
    assert body["chat_template_kwargs"] == {"enable_thinking": False}
    service = ChatService(None, "m", None, template_defaults={"enable_thinking": True, "x": 1})  # type: ignore[arg-type]  # no media policy: the test sends text only
    assert service.template_kwargs(ChatRequest.model_validate(body)) == {
        "enable_thinking": False,
        "x": 1,
    }
    nested = ChatRequest.model_validate({**body, "chat_template_kwargs": {"x": {"nested": 1}}})
    with pytest.raises(RequestError, match="chat_template_kwargs"):
        service.template_kwargs(nested)


def test_serve_defaults_to_the_run_template_kwargs(tmp_path):
    from videorl.inference import RunSettings
    from videorl.serve.chat import ChatService
    from videorl.serve.limits import ServeLimits

    def defaults(folder):
        run = RunSettings.from_checkpoint(folder)
        return ChatService.for_run(None, "m", run, ServeLimits()).template_defaults

    assert defaults(tmp_path) == {"enable_thinking": False}  # no run: eval's no-think default
    (tmp_path / "final").mkdir()
    (tmp_path / "config.yaml").write_text(
        "data:\n  think: true\n  chat_template_kwargs: {enable_thinking: false, x: 1}\n"
    )
    assert defaults(tmp_path / "final") == {"enable_thinking": False, "x": 1}


def test_variables_the_template_never_reads_are_not_passed(tiny_model_dir, monkeypatch):
    """Our tiny Qwen-VL template has no `enable_thinking`: passing it anyway made transformers
    take it for a processor argument and warn on every prompt (1376 lines per quickstart)."""
    import transformers.processing_utils as processing

    warnings: list[str] = []
    monkeypatch.setattr(processing.logger, "warning", lambda msg, *a, **k: warnings.append(msg))
    loaded = load_model(tiny_model_dir("qwen2_5_vl"))
    assert "enable_thinking" not in loaded.processor.chat_template
    plain = encode_record(loaded, RECORD, fake_video(), False)
    assert warnings == []
    loaded.processor.chat_template = QWEN35_LIKE  # a template that reads it still gets it
    assert not torch.equal(
        encode_record(loaded, RECORD, fake_video(), False).source.token_ids,
        plain.source.token_ids,
    )
