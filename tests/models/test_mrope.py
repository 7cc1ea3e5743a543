"""Text after a video starts at the reference M-RoPE position (models/mrope.py).

Reproducer of the transformers >= 5.3 regression (5.24 included): for a tiny Qwen2.5-VL and a
video whose scaled temporal extent (T - 1) * interval exceeds max(h, w) / merge, HF's own
`get_rope_index` starts the following text inside the video's temporal range; Qwen's reference
(and vLLM) start it at max + 1. Once transformers restores the reference, the first test fails
and the patch in models/mrope.py can go.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from videorl.models.inputs import collate, encode_prompt
from videorl.models.loading import load_model
from videorl.models.mrope import reference_positions
from videorl.video.decode import VideoConfig, frames_from_array


def reference_rope_index(input_ids, grid_thw, second_per_grid, config) -> torch.Tensor:
    """One unpadded row, written after Qwen's original `get_rope_index` (one video)."""
    merge = config.vision_config.spatial_merge_size
    video_token = config.video_token_id
    positions, start = [], 0
    where = (input_ids == video_token).nonzero().flatten()
    t, h, w = (int(x) for x in grid_thw[0])
    h, w = h // merge, w // merge
    first = int(where[0])
    positions.append(torch.arange(first).expand(3, -1))
    start = first
    t_index = (
        (
            torch.arange(t).view(-1, 1).expand(-1, h * w)
            * float(second_per_grid[0])
            * config.vision_config.tokens_per_second
        )
        .long()
        .flatten()
    )
    h_index = torch.arange(h).view(1, -1, 1).expand(t, -1, w).flatten()
    w_index = torch.arange(w).view(1, 1, -1).expand(t, h, -1).flatten()
    positions.append(torch.stack([t_index, h_index, w_index]) + start)
    rest = input_ids.numel() - (first + t * h * w)
    positions.append(torch.arange(rest).expand(3, -1) + int(positions[-1].max()) + 1)
    return torch.cat(positions, dim=1)


@pytest.fixture(scope="module")
def qwen2_5_vl(tmp_path_factory):
    from videorl.models.tiny import build_tiny_model

    return load_model(build_tiny_model("qwen2_5_vl", tmp_path_factory.mktemp("tiny")))


def long_video():
    frames = np.random.default_rng(0).integers(0, 256, size=(16, 56, 56, 3), dtype=np.uint8)
    return frames_from_array(
        frames,
        4.0,
        VideoConfig(fps=2.0, min_frames=4, max_frames=8, min_pixels=3136, max_pixels=3136),
    )


def rope_args(inputs):
    """The collated inputs `get_rope_index` takes."""
    names = ("input_ids", "mm_token_type_ids", "video_grid_thw", "second_per_grid_ts")
    return {k: inputs[k] for k in (*names, "attention_mask")}


def test_transformers_starts_text_inside_the_video_and_the_patch_fixes_it(qwen2_5_vl):
    prompt = encode_prompt(qwen2_5_vl, "When?", video=long_video())
    inputs, _ = collate([prompt], None, qwen2_5_vl.pad_token_id)
    backbone = qwen2_5_vl.model.model
    args = rope_args(inputs)
    expected = reference_rope_index(
        prompt.input_ids,
        prompt.vision["video_grid_thw"],
        prompt.vision["second_per_grid_ts"],
        backbone.config,
    )
    unpatched, _ = type(backbone).get_rope_index(backbone, **args)
    patched, delta = backbone.get_rope_index(**args)
    assert not torch.equal(
        unpatched[:, 0], expected
    )  # the regression (delete the patch once this fails)
    assert torch.equal(patched[:, 0], expected)
    assert int(delta) == int(expected.max()) + 1 - prompt.length


def test_left_padded_rows_get_the_same_positions_as_alone(qwen2_5_vl):
    prompts = [
        encode_prompt(qwen2_5_vl, "When does the shape change colour?", video=long_video()),
        encode_prompt(qwen2_5_vl, "When?", video=long_video()),
    ]
    inputs, _ = collate(prompts, None, qwen2_5_vl.pad_token_id)
    args = rope_args(inputs)
    batched, _ = qwen2_5_vl.model.model.get_rope_index(**args)
    for row, prompt in enumerate(prompts):
        alone, _ = collate([prompt], None, qwen2_5_vl.pad_token_id)
        single, _ = qwen2_5_vl.model.model.get_rope_index(
            **{k: alone[k] for k in args if k in alone}
        )
        keep = inputs["attention_mask"][row].bool()
        assert torch.equal(batched[:, row, keep], single[:, 0])


def test_reference_positions_leave_agreeing_runs_alone():
    positions = torch.tensor([[0, 1, 2, 2, 2, 4, 5], [0, 1, 2, 3, 3, 4, 5], [0, 1, 2, 3, 2, 4, 5]])
    types = torch.tensor([0, 0, 2, 2, 2, 0, 0])
    assert torch.equal(reference_positions(positions, types), positions)  # text already at max + 1
    late = positions.clone()
    late[0, 2:5] = torch.tensor([2, 6, 10])  # temporal ids past the next text start
    assert reference_positions(late, types)[:, 5:].tolist() == [[11, 12]] * 3
