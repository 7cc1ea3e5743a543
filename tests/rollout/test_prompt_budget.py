"""A prompt over `data.max_prompt_tokens` is skipped (the default) or, with
`data.long_prompts: trim`, given fewer frames until it fits, each in one warning line naming
the record, its frames, its tokens and the budget."""

from __future__ import annotations

import logging

import pytest
import torch

from videorl.config import load_config
from videorl.rollout.prompting import decode_prompts, record_encoder
from videorl.video.cache import VideoCache
from videorl.video.subsample import fewer_frames

VIDEO = ["video.max_frames=16", "video.min_frames=16", "video.fps=8"]


@pytest.fixture(scope="module")
def setup(tiny_model_dir, tmp_path_factory):
    """The tiny model, one temporal-grounding record and its full-length prompt (16 frames)."""
    from videorl.data.loaders import load_records
    from videorl.data.synth import synthesize
    from videorl.models.loading import load_model

    path = synthesize(tmp_path_factory.mktemp("budget"), ["temporal_grounding"], n=1, seed=2)
    (record,) = load_records(path).records
    loaded = load_model(tiny_model_dir("qwen2_5_vl"))
    config = load_config(None, VIDEO)
    full = decode_prompts([record], VideoCache(config.video), loaded, config.data)
    assert full.media[0].meta.num_frames == 16
    return loaded, record, full


def _decode(setup, budget: int, mode: str):
    loaded, record, _ = setup
    config = load_config(
        None, [*VIDEO, f"data.max_prompt_tokens={budget}", f"data.long_prompts={mode}"]
    )
    return decode_prompts([record], VideoCache(config.video), loaded, config.data), config


def test_an_over_long_prompt_is_skipped_naming_frames_tokens_and_budget(setup, caplog):
    _, record, full = setup
    length = full.prompts[0].length
    with caplog.at_level(logging.WARNING):
        decoded, _ = _decode(setup, length - 1, "skip")
    assert (decoded.records, decoded.skipped_long, decoded.trimmed_long) == ([], 1, 0)
    expected = (
        f"skipping sample {record.id}: 16 frames make {length} prompt tokens > "
        f"data.max_prompt_tokens={length - 1}; set data.long_prompts=trim, or lower "
        "video.max_frames or video.max_pixels"
    )
    assert caplog.messages == [expected]


def test_trim_keeps_the_most_frames_that_fit(setup, caplog):
    loaded, record, full = setup
    video = full.media[0]
    encode = record_encoder(loaded, load_config(None, VIDEO).data)
    per_two = full.prompts[0].length - encode(record, fewer_frames(video, 14)).length
    budget = full.prompts[0].length - 3 * per_two  # 10 frames fit, 12 do not
    with caplog.at_level(logging.WARNING):
        decoded, config = _decode(setup, budget, "trim")
    assert (decoded.skipped_long, decoded.trimmed_long) == (0, 1)
    (kept,), (prompt,) = decoded.media, decoded.prompts
    assert kept.meta.num_frames == 10 and prompt.length <= budget
    assert set(kept.meta.timestamps) < set(video.meta.timestamps)  # the true times, fewer
    assert kept.meta.fps == pytest.approx(10 / video.meta.duration)
    again = record_encoder(loaded, config.data)(decoded.records[0], kept)
    assert torch.equal(again.input_ids, prompt.input_ids)  # the prompt of the frames kept
    twelve = record_encoder(loaded, config.data)(record, fewer_frames(video, 12))
    assert twelve.length > budget  # no more frames would fit
    expected = (
        f"sample {record.id}: 16 frames make {full.prompts[0].length} prompt tokens > "
        f"data.max_prompt_tokens={budget}; trimmed to 10 frames ({prompt.length} tokens)"
    )
    assert caplog.messages == [expected]


def test_trim_skips_when_two_frames_do_not_fit(setup, caplog):
    _, record, _ = setup
    with caplog.at_level(logging.WARNING):
        decoded, _ = _decode(setup, 10, "trim")
    assert (decoded.records, decoded.skipped_long) == ([], 1)
    assert caplog.messages[-1].startswith(f"skipping sample {record.id}: 16 frames make ")
    assert caplog.messages[-1].endswith("data.max_prompt_tokens=10; even 2 frames do not fit")


def test_fewer_frames_keeps_the_uniform_stride(setup):
    video = setup[2].media[0]
    fewer = fewer_frames(video, 4)
    assert fewer.meta.frame_indices == tuple(video.meta.frame_indices[i] for i in (0, 4, 8, 12))
    assert torch.equal(fewer.frames, video.frames[[0, 4, 8, 12]])
    assert fewer.meta.duration == video.meta.duration
    with pytest.raises(ValueError, match="cannot keep 17 of 16 frames"):
        fewer_frames(video, 17)
