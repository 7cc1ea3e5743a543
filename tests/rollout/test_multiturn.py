"""Multi-turn rollouts with tools: the tool turn's format, the loss mask (tool tokens are
context only), and the frames the loss sees (exactly those of the generation calls)."""

from __future__ import annotations

import pytest
import torch

from tests.video.conftest import frame_numbers, index_frames
from videorl.models.generate import Generation, SamplingParams, generate
from videorl.models.inputs import collate, encode_prompt
from videorl.models.loading import load_model
from videorl.models.logprobs import response_logprobs
from videorl.rollout.multiturn import (
    MultiTurnLimits,
    loss_inputs,
    rollout_multiturn,
    trajectory_metrics,
)
from videorl.rollout.tools import ToolContext, ToolRunner, resolve_tools
from videorl.rollout.tools.chat import encode_tool_turn, tool_prompt_args, tool_turn_text
from videorl.video.decode import VideoConfig, decode_video
from videorl.video.encode import write_mp4
from videorl.video.media import MediaRef

CALL = '<tool_call>{"name": "get_clip", "arguments": {"start": 4, "end": 6, "fps": 4}}</tool_call>'
BAD = '<tool_call>{"name": "get_clip", "arguments": {"start": 40, "end": 60}}</tool_call>'


@pytest.fixture(scope="module", params=["qwen2_5_vl", "qwen3_vl"])
def setup(request, tiny_model_dir, tmp_path_factory):
    torch.manual_seed(0)
    loaded = load_model(tiny_model_dir(request.param))
    factor = 32 if request.param == "qwen3_vl" else 28
    path = write_mp4(tmp_path_factory.mktemp("mt") / "v.mp4", index_frames(80, 64, 96), 8)
    config = VideoConfig(
        fps=0.25, min_frames=2, max_frames=4, min_pixels=factor * factor, factor=factor
    )
    video = decode_video(path, config)
    runner = ToolRunner(resolve_tools(["get_clip", "get_frame"]))
    system, kwargs = tool_prompt_args(loaded, runner.schemas(), None, {})
    prompt = encode_prompt(
        loaded, "When does the square flash?", video=video, system=system, template_kwargs=kwargs
    )
    ctx = ToolContext(media=MediaRef(path=str(path)), video=video, config=config)
    return loaded, prompt, ctx, runner


def _ids(loaded, text):
    ids = loaded.tokenizer(text, add_special_tokens=False)["input_ids"]
    return torch.tensor(ids + [loaded.eos_token_ids[0]])


class Scripted:
    """Turns from a script (None: the real model samples, with log-probs); records the
    batched inputs of every call, as `generate` builds them."""

    def __init__(self, loaded, script):
        self.loaded, self.script, self.calls = loaded, list(script), []

    def __call__(self, loaded, contexts, params):
        self.calls.append(collate(contexts, None, loaded.pad_token_id)[0])
        text = self.script.pop(0)
        if text is None:
            return generate(loaded, contexts, params)
        return [
            Generation([_ids(loaded, text)] * params.n, [], [False] * params.n) for _ in contexts
        ]


def _rollout(setup, script, limits=None, params=None):
    loaded, prompt, ctx, runner = setup
    fn = Scripted(loaded, script)
    rows = rollout_multiturn(
        loaded,
        [prompt],
        [ctx],
        runner,
        params or SamplingParams(n=1, max_new_tokens=200),
        limits or MultiTurnLimits(max_turns=3, max_total_tokens=4000),
        generate_fn=fn,
    )
    return rows[0][0], fn


def test_tools_are_listed_in_the_prompt(setup):
    loaded, prompt, _, _ = setup
    text = loaded.tokenizer.decode(prompt.input_ids)
    assert "<tools>" in text and '"name": "get_clip"' in text and "<tool_call>" in text


def test_tool_turn_text_is_qwen_format(setup):
    loaded, _, ctx, runner = setup
    from videorl.rollout.tools import parse_tool_calls

    outcome = runner.run(parse_tool_calls(CALL)[0], ctx)
    text = tool_turn_text(loaded, [outcome], close_turn=False)
    assert text.startswith("\n<|im_start|>user\n<tool_response>\nClip of 4-6 s: 8 frames")
    assert text.endswith(
        "<|vision_start|><|video_pad|><|vision_end|>\n</tool_response>"
        "<|im_end|>\n<|im_start|>assistant\n"
    )
    assert tool_turn_text(loaded, [outcome], close_turn=True).startswith("<|im_end|>\n")


def test_tool_tokens_are_masked_and_the_row_carries_every_turn(setup):
    loaded, prompt, _, _ = setup
    row, _ = _rollout(setup, [CALL, "<answer>B</answer>"])
    first, last = _ids(loaded, CALL), _ids(loaded, "<answer>B</answer>")
    assert row.turns == 2 and row.calls == 1 and row.errors == 0 and not row.truncated
    assert row.text == "<answer>B</answer>"
    mask = row.loss_mask
    tool_len = row.response_ids.numel() - first.numel() - last.numel()
    assert tool_len > 0
    assert mask.tolist() == [1.0] * first.numel() + [0.0] * tool_len + [1.0] * last.numel()
    assert torch.equal(row.response_ids[: first.numel()], first)
    assert torch.equal(row.response_ids[-last.numel() :], last)
    tool_types = row.response_token_types[first.numel() : first.numel() + tool_len]
    assert (tool_types == 2).sum() > 0  # the clip's video tokens sit in the tool turn
    assert (row.response_token_types[mask.bool()] == 0).all()
    # the media the model saw, in order: the prompt's video, then the clip at 4 fps
    assert len(row.media) == 2 and row.media[0] is prompt.source.video
    assert frame_numbers(row.media[1].frames) == [32, 34, 36, 38, 40, 42, 44, 46]
    assert trajectory_metrics([row])["tools/calls_per_row"] == 1.0
    assert row.calls_made()[0].name == "get_clip" and row.calls_made()[0].turn == 1


def test_the_loss_forward_sees_the_frames_of_the_generation_calls(setup):
    loaded, prompt, _, _ = setup
    row, fn = _rollout(setup, [CALL, "<answer>B</answer>"])
    inputs, mask = loss_inputs([row], loaded.pad_token_id)
    seen = fn.calls[-1]  # the inputs of the last generation call: prompt + turn 1 + tool turn
    context_len = seen["input_ids"].shape[1]
    for key in ("input_ids", "mm_token_type_ids", "attention_mask"):
        assert torch.equal(inputs[key][:, :context_len], seen[key]), key
    assert inputs["input_ids"].shape[1] == row.context.length  # + the final turn
    vision = [k for k in seen if k.startswith(("pixel", "video_grid", "image_grid", "second"))]
    assert "pixel_values_videos" in vision
    for key in vision:
        assert torch.equal(inputs[key], seen[key]), key
    # and those are the row's media, re-encoded from scratch: prompt video, then the clip
    again = encode_tool_turn(
        loaded, tool_turn_text(loaded, row.outcomes, close_turn=False), row.media[1:]
    )
    videos = prompt.vision["pixel_values_videos"]
    assert torch.equal(inputs["pixel_values_videos"][: videos.shape[0]], videos)
    assert torch.equal(
        inputs["pixel_values_videos"][videos.shape[0] :], again.vision["pixel_values_videos"]
    )
    assert mask.sum() == row.loss_mask.sum()


def test_loss_logprobs_equal_the_sampling_logprobs_after_a_tool_turn(setup):
    loaded, _, _, _ = setup
    params = SamplingParams(n=1, max_new_tokens=12, temperature=1.0, logprobs=True)
    row, _ = _rollout(setup, [CALL, None], params=params)
    assert row.turns == 2
    inputs, mask = loss_inputs([row], loaded.pad_token_id)
    targets = inputs["input_ids"][:, -mask.shape[1] :]
    with torch.no_grad():
        logp, _ = response_logprobs(loaded.model, inputs, targets, temperature=1.0)
    sampled = row.loss_mask.bool().clone()
    sampled[: _ids(loaded, CALL).numel()] = False  # turn 1 was scripted, not sampled
    assert sampled.sum() > 0
    torch.testing.assert_close(logp[0][sampled], row.logprobs[sampled], atol=2e-4, rtol=0)


def test_bad_calls_and_budgets_end_rows_without_crashing(setup):
    row, _ = _rollout(setup, [BAD, "<answer>A</answer>"])
    assert row.calls == 1 and row.errors == 1 and row.turns == 2
    assert "outside the video" in row.outcomes[0].text
    assert len(row.media) == 1  # an error shows no media
    row, _ = _rollout(setup, [CALL, CALL, CALL], limits=MultiTurnLimits(max_turns=2))
    assert row.turns == 2 and row.truncated and row.calls == 1
    row, _ = _rollout(setup, [CALL, "x"], limits=MultiTurnLimits(max_total_tokens=40))
    assert row.truncated and row.turns == 1 and row.loss_mask.sum() == row.loss_mask.numel()


# Qwen3-VL's handling of `tools` and tool messages, cut down to what the tool turn uses.
TOOL_TEMPLATE = (
    "{%- if tools %}{{- '<|im_start|>system\\n# Tools\\n<tools>' }}{% for t in tools %}"
    "{{- '\\n' + (t | tojson) }}{% endfor %}{{- '\\n</tools><|im_end|>\\n' }}{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message.role == 'tool' %}"
    "{%- if loop.first or messages[loop.index0 - 1].role != 'tool' %}"
    "{{- '<|im_start|>user' }}{%- endif %}"
    "{{- '\\n<tool_response>\\n' }}{%- for part in message.content %}"
    "{%- if part.type == 'text' %}{{- part.text }}"
    "{%- elif part.type == 'video' %}{{- '<|vision_start|><|video_pad|><|vision_end|>' }}"
    "{%- endif %}{%- endfor %}{{- '\\n</tool_response>' }}"
    "{%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}"
    "{{- '<|im_end|>\\n' }}{%- endif %}"
    "{%- else %}{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- endif %}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


def test_a_template_that_renders_tools_writes_the_tool_turn(tiny_model_dir):
    from dataclasses import replace

    from videorl.rollout.tools import ToolCall, ToolOutcome
    from videorl.rollout.tools.chat import template_renders_tools

    loaded = load_model(tiny_model_dir("qwen2_5_vl"))
    loaded.tokenizer.chat_template = TOOL_TEMPLATE
    loaded = replace(loaded, processor=None)
    assert template_renders_tools(loaded)
    schemas = ToolRunner(resolve_tools(["get_frame"])).schemas()
    system, kwargs = tool_prompt_args(loaded, schemas, None, {})
    assert system is None and kwargs["tools"] == schemas
    outcomes = [ToolOutcome(ToolCall(""), "first"), ToolOutcome(ToolCall(""), "second")]
    text = tool_turn_text(loaded, outcomes, close_turn=False)
    assert text == (
        "\n<|im_start|>user\n<tool_response>\nfirst\n</tool_response>\n<tool_response>\n"
        "second\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
    )


@pytest.mark.parametrize("name", ["max_turns", "max_total_tokens", "max_calls_per_turn"])
def test_limits_below_one_name_the_field(name):
    with pytest.raises(ValueError, match=rf"^multi-turn limit {name}=0 must be >= 1$"):
        MultiTurnLimits(**{name: 0})
