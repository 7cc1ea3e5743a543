"""What the vLLM engine hands vLLM and what it refuses (no vLLM needed for these)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from videorl.config import RolloutConfig
from videorl.errors import ConfigError
from videorl.models.inputs import encode_prompt, hf_video_metadata, with_prefix
from videorl.models.loading import load_model
from videorl.rollout.vllm_support import (
    ARCHITECTURES,
    SUPPORTED_MODEL_TYPES,
    VLLMSettings,
    allowed_token_ids,
    check_media_limits,
    check_vllm_support,
    cpu_limits,
    device_normalization_safe,
    video_item,
    vllm_request,
)
from videorl.video.decode import VideoConfig, frames_from_array


def decoded_video(factor: int = 28):
    """16 random source frames at 4 fps, sampled at 2 fps like a decoded file (8 frames)."""
    frames = np.random.default_rng(0).integers(0, 256, size=(16, 64, 80, 3), dtype=np.uint8)
    config = VideoConfig(
        fps=2.0,
        min_frames=4,
        max_frames=8,
        min_pixels=4 * factor**2,
        max_pixels=16 * factor**2,
        factor=factor,
    )
    return frames_from_array(frames, 4.0, config)


def decoded_image():
    frames = np.random.default_rng(1).integers(0, 256, size=(1, 84, 112, 3), dtype=np.uint8)
    return frames_from_array(frames, None, VideoConfig(min_pixels=3136, max_pixels=12544))


def test_video_item_is_the_frames_and_metadata_the_hf_processor_gets():
    video = decoded_video()
    frames, meta = video_item(video)
    assert frames is video.frames  # the decoded frames themselves: decoded once, not copied
    expected = hf_video_metadata(video.meta, int(video.frames.shape[0]))
    assert meta["fps"] == expected.fps and meta["total_num_frames"] == expected.total_num_frames
    assert meta["frames_indices"] == list(expected.frames_indices) == [0, 2, 4, 6, 8, 10, 12, 14]
    assert meta["duration"] == pytest.approx(4.0)
    assert meta["do_sample_frames"] is False


def test_request_has_one_placeholder_and_the_prefix(tiny_model_dir):
    loaded = load_model(tiny_model_dir("qwen2_5_vl"))
    prompt = encode_prompt(loaded, "When?", video=decoded_video())
    pad = loaded.tokenizer.convert_tokens_to_ids("<|video_pad|>")
    request = vllm_request(prompt)
    assert request["prompt_token_ids"].count(pad) == 1  # vLLM expands it itself
    assert int((prompt.input_ids == pad).sum()) > 1  # the HF processor already did
    assert set(request["multi_modal_data"]) == {"video"}
    extended = vllm_request(with_prefix(prompt, torch.tensor([5, 6, 7])))
    assert extended["prompt_token_ids"] == request["prompt_token_ids"] + [5, 6, 7]
    text_only = vllm_request(encode_prompt(loaded, "Hi"))
    assert "multi_modal_data" not in text_only


def test_a_multi_turn_context_sends_every_turns_media_with_one_placeholder_each(
    tiny_model_dir, tmp_path
):
    """A context after a tool turn with a clip and a frame: the template tokens grow by the
    turns, the media by the tool's, and expanding each placeholder by its item's token count
    gives the HF encoding (Qwen2.5-VL: a pad per token, nothing else)."""
    from tests.video.conftest import index_frames
    from videorl.models.generate import Generation, SamplingParams
    from videorl.rollout.multiturn import MultiTurnLimits, rollout_multiturn
    from videorl.rollout.tools import ToolContext, ToolRunner, resolve_tools
    from videorl.rollout.tools.chat import tool_prompt_args
    from videorl.video.decode import decode_video
    from videorl.video.encode import write_mp4
    from videorl.video.media import MediaRef

    loaded = load_model(tiny_model_dir("qwen2_5_vl"))
    path = write_mp4(tmp_path / "v.mp4", index_frames(80, 64, 96), 8)
    config = VideoConfig(fps=0.25, min_frames=2, max_frames=4, min_pixels=28 * 28, factor=28)
    video = decode_video(path, config)
    runner = ToolRunner(resolve_tools(["get_clip", "get_frame"]))
    system, kwargs = tool_prompt_args(loaded, runner.schemas(), None, {})
    prompt = encode_prompt(loaded, "When?", video=video, system=system, template_kwargs=kwargs)
    turns = [
        (
            '<tool_call>{"name": "get_frame", "arguments": {"time": 3}}</tool_call>'
            '<tool_call>{"name": "get_clip", "arguments": {"start": 4, "end": 6}}</tool_call>'
        ),
        "<answer>B</answer>",
    ]
    contexts = []

    def script(_, given, params):
        contexts.extend(given)
        ids = loaded.tokenizer(turns[len(contexts) - 1], add_special_tokens=False)["input_ids"]
        return [Generation([torch.tensor([*ids, loaded.eos_token_ids[0]])], [], [False])]

    [[row]] = rollout_multiturn(
        loaded,
        [prompt],
        [ToolContext(media=MediaRef(path=str(path)), video=video, config=config)],
        runner,
        SamplingParams(n=1, max_new_tokens=64),
        MultiTurnLimits(max_turns=2),
        generate_fn=script,
    )
    assert row.calls == 2 and row.errors == 0
    context = contexts[-1]  # prompt, the calling turn, the tool turn
    request = vllm_request(context)
    first = vllm_request(prompt)["prompt_token_ids"]
    assert request["prompt_token_ids"][: len(first)] == first
    videos, images = request["multi_modal_data"]["video"], request["multi_modal_data"]["image"]
    assert [v[0] for v in videos] == [m.frames for m in row.media if not m.meta.is_image]
    assert len(videos) == 2 and videos[0][0] is video.frames
    assert len(images) == 1  # the frame (row.media[1]), then the clip
    assert images[0].data_ptr() == row.media[1].frames.data_ptr() and row.media[1].meta.is_image
    merge = loaded.processor.image_processor.merge_size**2
    counts = {
        "<|video_pad|>": iter(int(g.prod()) // merge for g in context.vision["video_grid_thw"]),
        "<|image_pad|>": iter(int(g.prod()) // merge for g in context.vision["image_grid_thw"]),
    }
    pads = {loaded.tokenizer.convert_tokens_to_ids(t): t for t in counts}
    expanded = []
    for token in request["prompt_token_ids"]:
        expanded += [token] * (next(counts[pads[token]]) if token in pads else 1)
    assert expanded == context.input_ids.tolist()
    assert all(next(c, None) is None for c in counts.values())  # every item placed


def test_tools_raise_vllms_media_limits_by_what_their_turns_may_add():
    plain = VLLMSettings(model_path="m", rollout=RolloutConfig(videos_per_prompt=2))
    assert plain.engine_args(sleep_mode_available=False)["limit_mm_per_prompt"] == {
        "video": 2,
        "image": 1,
    }
    tools = RolloutConfig(tools=("get_clip",), max_turns=3, images_per_prompt=0)
    limits = VLLMSettings(model_path="m", rollout=tools).media_limits()
    assert limits == {"video": 1 + 2 * 4, "image": 0 + 2 * 4}  # 4 calls in each of 2 turns


def test_more_media_than_vllms_limit_is_refused_naming_the_key():
    request = {"prompt_token_ids": [1], "multi_modal_data": {"video": [0, 1], "image": [0] * 9}}
    check_media_limits(request, {"video": 2, "image": 9})
    with pytest.raises(ConfigError, match=r"holds 9 images, over vLLM's limit of 8: raise "):
        check_media_limits(request, {"video": 2, "image": 8})
    check_media_limits({"prompt_token_ids": [1]}, {})  # text only


def test_allowed_tokens_exclude_only_the_banned():
    allowed = allowed_token_ids(10, [3, 7])
    assert allowed == [0, 1, 2, 4, 5, 6, 8, 9]


def test_device_normalization_is_refused_where_video_and_image_processors_differ(tiny_model_dir):
    assert device_normalization_safe(tiny_model_dir("qwen2_5_vl"))
    assert not device_normalization_safe(tiny_model_dir("qwen3_vl"))  # CLIP stats vs 0.5/0.5


def _model_with_head_size(tmp_path, head_dim: int):
    (tmp_path / "config.json").write_text(
        json.dumps(
            {
                "model_type": "qwen3",
                "hidden_size": 2 * head_dim,
                "num_attention_heads": 2,
                "head_dim": head_dim,
            }
        )
    )
    return str(tmp_path)


def test_refuses_a_head_size_the_cpu_kernels_lack(tmp_path):
    with pytest.raises(ConfigError, match="head size is 48"):
        check_vllm_support(
            VLLMSettings(model_path=_model_with_head_size(tmp_path, 48)),
            on_cpu=True,
            world_size=1,
        )
    check_vllm_support(VLLMSettings(model_path=str(tmp_path)), on_cpu=False, world_size=1)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"tensor_parallel_size": 3}, "divide the 4 training ranks"),
        ({"vllm_sleep_level": 1}, "needs a GPU"),
        ({"max_model_len": 64}, "leaves no room"),
        (
            {"max_model_len": 512, "tools": ("get_clip",), "max_total_tokens": 512},
            "rollout.max_total_tokens=512",
        ),
    ],
)
def test_refuses_settings_it_cannot_honour(tmp_path, change, message):
    rollout = RolloutConfig(max_new_tokens=64, **change)
    settings = VLLMSettings(model_path=_model_with_head_size(tmp_path, 32), rollout=rollout)
    with pytest.raises(ConfigError, match=message):
        check_vllm_support(settings, on_cpu=True, world_size=4)


def _linear_attention_model(tmp_path, linear_head_dim: int):
    (tmp_path / "config.json").write_text(
        json.dumps(
            {
                "model_type": "qwen3_5",
                "text_config": {
                    "hidden_size": 64,
                    "num_attention_heads": 2,
                    "head_dim": 32,
                    "layer_types": ["linear_attention", "full_attention"],
                    "linear_key_head_dim": linear_head_dim,
                    "linear_value_head_dim": linear_head_dim,
                },
            }
        )
    )
    return str(tmp_path)


def test_cpu_limits_of_qwen3_5s_gated_delta_net(tmp_path):
    """vLLM 0.32's CPU kernel of the gated delta net asserts bfloat16 and rejects head size 32
    (the tiny models'); Qwen3.5's own 128 runs in bfloat16 (tests/vllm/test_parity.py)."""
    path = _linear_attention_model(tmp_path, 128)
    assert cpu_limits(path, "bfloat16") == []
    (reason,) = cpu_limits(path, "float32")
    assert "runs in bfloat16 only, not float32; set model.dtype: bfloat16" in reason
    tiny = _linear_attention_model(tmp_path, 32)
    (reason,) = cpu_limits(tiny, "bfloat16")
    assert "gated delta net's head size is 32" in reason
    settings = VLLMSettings(model_path=tiny, dtype="float32")
    with pytest.raises(ConfigError, match="on CPU: .*float32.*; the gated delta net's .*engine=hf"):
        check_vllm_support(settings, on_cpu=True, world_size=1)
    check_vllm_support(settings, on_cpu=False, world_size=1)  # a GPU runs it in any dtype


def test_every_tiny_arch_has_a_parity_tested_vllm_path():
    assert set(ARCHITECTURES) - {"qwen3"} <= set(SUPPORTED_MODEL_TYPES)
