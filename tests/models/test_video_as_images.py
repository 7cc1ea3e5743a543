"""`data.video_as_images`: the prompt's video as one image per frame (LongVT's
`data.sglang_video=True`, `verl/utils/dataset/rl_dataset.py` lines 253-284), for the HF
forward and the vLLM request alike."""

from __future__ import annotations

import pytest
import torch

from tests.models.test_tiny import fake_video
from videorl.models.inputs import encode_prompt
from videorl.models.loading import load_model
from videorl.models.logprobs import rows_logprobs
from videorl.rollout.vllm_support import vllm_request


@pytest.fixture(scope="module")
def encoded(tiny_model_dir):
    torch.manual_seed(3)
    loaded = load_model(tiny_model_dir("qwen2_5_vl"))
    video = fake_video(8, size=56)
    as_video = encode_prompt(loaded, "<video>What happens?", video=video)
    as_images = encode_prompt(loaded, "<video>What happens?", video=video, video_as_images=True)
    return loaded, video, as_video, as_images


def _count(loaded, ids: torch.Tensor, token: str) -> int:
    return int((ids == loaded.tokenizer.convert_tokens_to_ids(token)).sum())


def test_each_frame_is_an_image_with_its_own_tokens(encoded):
    loaded, _, as_video, as_images = encoded
    assert {"pixel_values_videos", "video_grid_thw"} <= as_video.vision.keys()
    assert "image_grid_thw" not in as_video.vision
    assert not {"pixel_values_videos", "video_grid_thw"} & as_images.vision.keys()
    assert as_images.vision["image_grid_thw"].tolist() == [[1, 4, 4]] * 8  # 56 px / 14
    assert _count(loaded, as_images.input_ids, "<|vision_start|>") == 8
    # a video merges 2 frames per temporal patch; 8 images hold twice its tokens
    video_tokens = _count(loaded, as_video.input_ids, "<|video_pad|>")
    image_tokens = _count(loaded, as_images.input_ids, "<|image_pad|>")
    assert (video_tokens, image_tokens) == (4 * 2 * 2, 8 * 2 * 2)
    assert _count(loaded, as_images.input_ids, "<|video_pad|>") == 0


def test_the_policy_scores_a_response_to_the_frames(encoded):
    loaded, _, _, as_images = encoded
    response = torch.tensor([5, 9, 11, 2])
    with torch.no_grad():
        logp, _, mask = rows_logprobs(loaded, [as_images], [response], temperature=1.0)
    assert mask.sum() == 4 and torch.isfinite(logp[mask.bool()]).all()


def test_the_vllm_request_sends_the_frames_as_images(encoded):
    loaded, video, _, as_images = encoded
    request = vllm_request(as_images)
    assert "video" not in request["multi_modal_data"]
    images = request["multi_modal_data"]["image"]
    assert len(images) == 8 and torch.equal(torch.as_tensor(images[3]), video.frames[3])
    pads = torch.tensor(request["prompt_token_ids"])
    assert _count(loaded, pads, "<|image_pad|>") == 8  # one unexpanded placeholder per frame
